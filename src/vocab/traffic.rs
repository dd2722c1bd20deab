//! Classes of traffic that mechanisms key on: the operation class of an attempt (the essay's
//! circuit_key) and the priority of a workflow (Google's criticality levels).

crate::named_enum! {
    /// What an attempt does at its dependency. `Control` is status lookups and cancels: it keeps
    /// its own circuit and reserved capacity so recovery is never blocked by normal traffic.
    #[derive(PartialOrd, Ord)]
    pub enum OperationClass {
        Read => "read",
        Write => "write",
        Control => "control",
    }
}

crate::named_enum! {
    /// Criticality of a workflow's traffic, most important first (docs/references.md section 5).
    #[derive(PartialOrd, Ord)]
    pub enum Priority {
        CriticalPlus => "critical_plus",
        Critical => "critical",
        SheddablePlus => "sheddable_plus",
        Sheddable => "sheddable",
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
