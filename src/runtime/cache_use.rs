//! How a policy's runtime uses the caches in front of dependencies (docs/essay.md section 23):
//! `[policy.P.cache.<dependency>]`. The world owns a cache's contract, key space and entries
//! (world::cache); the policy decides whether its runtime looks there first, whether it
//! serves stale entries when the dependency fails (RFC 5861 stale-if-error), and whether
//! concurrent misses on one key share one call (Go's singleflight). The engine drives it
//! (engine::cache).

use crate::scenario::types::CacheUseSpec;
use crate::scenario::{FieldPath, Policy, ScenarioError, Source, error_at_path, quote, unknown_name};
use crate::world::World;

/// One dependency's cache as a policy uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheUse {
    /// A stale entry (within the contract's stale-if-error window) answers when the
    /// dependency fails, for task classes the contract does not forbid.
    pub stale_if_error: bool,
    /// Concurrent misses on one key wait for one call to the dependency and share its answer.
    pub single_flight: bool,
}

fn compile_cache_use(spec: &CacheUseSpec) -> CacheUse {
    CacheUse { stale_if_error: spec.stale_if_error.unwrap_or(true), single_flight: spec.single_flight.unwrap_or(true) }
}

/// `[policy.P.cache.<dependency>]`, by dependency index: the dependency needs a
/// `[dependency.cache]`, and its SDK client (if any) cannot be used with it in the same policy
/// (a fill is one plain call).
pub fn compile_cache_uses(
    source: &Source,
    path: &FieldPath,
    p: &Policy,
    world: &World,
) -> Result<Vec<Option<CacheUse>>, ScenarioError> {
    let mut uses = vec![None; world.dependencies.len()];
    for (name, spec) in &p.cache {
        let at = path.key(name);
        let Some(d) = world.dependency_index(name) else {
            return Err(error_at_path(source, &at, unknown_name("dependency", name, world.dependency_names())));
        };
        if world.dependencies[d].cache.is_none() {
            let message = format!("dependency {} has no [dependency.cache] to use", quote(name));
            return Err(error_at_path(source, &at, message));
        }
        if p.sdk_client.contains_key(name) {
            let message = format!(
                "{} is called through an SDK client in this policy: a cache in front of it is not modelled with one",
                quote(name)
            );
            return Err(error_at_path(source, &at, message));
        }
        uses[d] = Some(compile_cache_use(spec));
    }
    Ok(uses)
}
