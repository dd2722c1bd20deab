//! Classes of traffic that mechanisms key on: the operation class of an attempt (the essay's
//! circuit_key) and the priority of a workflow (Google's criticality levels).

use std::fmt;

/// What an attempt does at its dependency. `Control` is status lookups and cancels: it keeps
/// its own circuit and reserved capacity so recovery is never blocked by normal traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OperationClass {
    Read,
    Write,
    Control,
}

impl OperationClass {
    pub const COUNT: usize = 3;
    pub const ALL: [OperationClass; Self::COUNT] =
        [OperationClass::Read, OperationClass::Write, OperationClass::Control];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            OperationClass::Read => "read",
            OperationClass::Write => "write",
            OperationClass::Control => "control",
        }
    }

    pub fn parse(text: &str) -> Option<OperationClass> {
        Self::ALL.into_iter().find(|c| c.name() == text)
    }
}

/// Criticality of a workflow's traffic, most important first (ANCHORS.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    CriticalPlus,
    Critical,
    SheddablePlus,
    Sheddable,
}

impl Priority {
    pub const COUNT: usize = 4;
    pub const ALL: [Priority; Self::COUNT] =
        [Priority::CriticalPlus, Priority::Critical, Priority::SheddablePlus, Priority::Sheddable];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::CriticalPlus => "critical_plus",
            Priority::Critical => "critical",
            Priority::SheddablePlus => "sheddable_plus",
            Priority::Sheddable => "sheddable",
        }
    }

    pub fn parse(text: &str) -> Option<Priority> {
        Self::ALL.into_iter().find(|p| p.name() == text)
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indices_follow_all() {
        for (i, c) in OperationClass::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(OperationClass::parse(c.name()), Some(c));
        }
        for (i, p) in Priority::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i);
            assert_eq!(Priority::parse(p.name()), Some(p));
        }
        assert!(Priority::CriticalPlus < Priority::Sheddable, "order is importance");
    }
}
