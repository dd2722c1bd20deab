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

/// Declares a closed set: the enum, and inherent `COUNT`, `ALL` (in declaration order),
/// `index()`, `name()` and `parse()`, `Display` as its name, and its `Named` impl. Extra derives go in the attributes.
#[macro_export]
macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name { $($(#[$vmeta])* $variant),+ }

        #[allow(dead_code)]
        impl $name {
            pub const COUNT: usize = [$(stringify!($variant)),+].len();
            pub const ALL: [$name; Self::COUNT] = [$($name::$variant),+];

            pub fn index(self) -> usize {
                self as usize
            }

            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                Self::ALL.into_iter().find(|v| v.name() == text)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl $crate::vocab::Named for $name {
            const ALL: &'static [Self] = &<$name>::ALL;

            fn name(self) -> &'static str {
                <$name>::name(self)
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
        for (i, c) in Color::ALL.into_iter().enumerate() {
            assert_eq!(<Color as Named>::parse(c.name()), Some(c));
            assert_eq!(c.index(), i);
        }
        assert_eq!(Color::COUNT, 2);
        assert_eq!(<Color as Named>::parse("blue"), None);
        assert_eq!(Color::choices(), "red, green");
    }
}
