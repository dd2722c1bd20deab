//! What a dependency is, as the essay's `dependency.kind` trace attribute names it; it decides
//! the OpenTelemetry GenAI operation a trace gives the dependency's calls.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum DependencyKind {
        /// A model provider (generation, chat).
        Model => "model",
        /// Vector search, document retrieval, reranking.
        Retrieval => "retrieval",
        /// A tool behind MCP.
        McpTool => "mcp_tool",
        /// A remote agent reached over A2A (the default for a dependency with `calls`).
        A2aAgent => "a2a_agent",
        /// A business API or any other service (the default otherwise).
        Api => "api",
    }
}

impl DependencyKind {
    /// `gen_ai.operation.name` of the OpenTelemetry GenAI semantic conventions, where one fits.
    pub fn gen_ai_operation(self) -> Option<&'static str> {
        match self {
            DependencyKind::Model => Some("chat"),
            DependencyKind::Retrieval => Some("retrieval"),
            DependencyKind::McpTool => Some("execute_tool"),
            DependencyKind::A2aAgent => Some("invoke_agent"),
            DependencyKind::Api => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_an_api_has_no_gen_ai_operation() {
        for k in DependencyKind::ALL {
            assert_eq!(DependencyKind::parse(k.name()), Some(k));
            assert_eq!(k.gen_ai_operation().is_none(), k == DependencyKind::Api);
        }
    }
}
