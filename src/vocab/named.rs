//! Closed sets that a scenario file spells as words. Each enum lists all its values and names
//! each one in an exhaustive match, so parsing is a lookup over that list: a new value cannot
//! silently parse as another, and the error message lists exactly the accepted words.

pub trait Named: Copy + 'static {
    const ALL: &'static [Self];

    fn name(self) -> &'static str;

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == text)
    }

    /// "a, b, c": the accepted spellings, for error messages.
    fn choices() -> String {
        Self::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", ")
    }
}

/// Declares a `Named` enum from its variants and spellings.
#[macro_export]
macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name { $($(#[$vmeta])* $variant),+ }

        impl $crate::vocab::Named for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];

            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Named;

    crate::named_enum! {
        enum Color { Red => "red", Green => "green" }
    }

    #[test]
    fn names_round_trip_and_list_their_choices() {
        for c in Color::ALL {
            assert_eq!(Color::parse(c.name()), Some(*c));
        }
        assert_eq!(Color::parse("blue"), None);
        assert_eq!(Color::choices(), "red, green");
    }
}
