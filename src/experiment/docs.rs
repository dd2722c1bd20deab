//! `faultline docs [TOPIC]`: the documentation, built into the binary, so the starter file's
//! pointers work wherever `faultline` is installed (a `cargo install` leaves no docs/ folder).

use crate::experiment::command::CommandError;

/// (topic, file, what it documents), in the order `faultline docs` lists them.
pub const TOPICS: [(&str, &str, &str); 9] = [
    ("scenario", include_str!("../../docs/scenario.md"), "every field of a scenario file"),
    ("metrics", include_str!("../../docs/metrics.md"), "every metric and output file"),
    ("trace", include_str!("../../docs/trace.md"), "replay and the OTLP traces"),
    ("tune", include_str!("../../docs/tune.md"), "faultline tune: the Pareto front of a policy"),
    ("calibrate", include_str!("../../docs/calibrate.md"), "faultline calibrate: a scenario from traces"),
    ("check", include_str!("../../docs/check.md"), "faultline check: the essay's checklist answered, lint rules"),
    ("cluster", include_str!("../../docs/cluster.md"), "long sweeps, shards, Slurm, Kubernetes, GitHub Actions"),
    (
        "references",
        include_str!("../../docs/references.md"),
        "the closed forms and peer tools faultline is checked against",
    ),
    ("essay", include_str!("../../docs/essay.md"), "the essay the features come from"),
];

pub fn docs(topic: Option<&str>) -> Result<String, CommandError> {
    match topic {
        None => {
            let mut text = String::from("faultline docs TOPIC prints one document (Markdown):\n\n");
            for (name, _, what) in TOPICS {
                text.push_str(&format!("  {name:<11} {what}\n"));
            }
            Ok(text)
        }
        Some(t) => match TOPICS.iter().find(|(name, _, _)| *name == t) {
            Some((_, body, _)) => Ok(body.to_string()),
            None => Err(CommandError::Input(crate::scenario::unknown_name(
                "topic",
                t,
                TOPICS.iter().map(|(name, _, _)| *name),
            ))),
        },
    }
}
