//! An SDK call's state in the engine (engine::sdk drives it): data only, so the simulation
//! can hold the calls without importing their driver.

use crate::runtime::guard::pipeline::RouteId;
use crate::runtime::sdk_client::SdkCall;
use crate::runtime::{AttemptResult, Purpose, Spend};
use crate::sim::{Micros, StreamKey};
use crate::vocab::Priority;
use crate::world::tokens::CallTokens;

/// One SDK call: one runtime attempt of a step.
#[derive(Debug, Clone, Copy)]
pub(super) struct SdkSlot {
    pub generation: u32,
    pub live: bool,
    pub run: u32,
    pub run_gen: u32,
    pub step: u8,
    pub serial: u32,
    pub station: u16,
    pub purpose: Purpose,
    pub priority: Priority,
    pub measured: bool,
    /// The runtime attempt's key: hidden attempt 0 uses it as it is.
    pub key: StreamKey,
    pub tokens: Option<CallTokens>,
    /// The runtime's first-token deadline for the whole call (its start plus the step's
    /// `first_token_timeout_ms`), until a hidden attempt's first token came: the runtime's
    /// side of the call, like its timeout, never retried by the SDK.
    pub first_token_at: Option<Micros>,
    /// Its writes carry the runtime attempt's own key to a dependency that honours keys
    /// (`idempotency_key = "per_attempt"`): its resends share that key.
    pub attempt_key: bool,
    /// When the runtime's timeout for its attempt cuts the whole call (Micros::MAX: never).
    pub cut_at: Micros,
    /// A charged retry's root token and cost are held for the hidden attempt the client sleeps
    /// before: they come back if that attempt is never sent.
    pub held: Option<Spend>,
    pub call: SdkCall,
    /// The hidden attempt out, if any (none while the client sleeps).
    pub child: Option<(u32, u32)>,
    /// The client's rate limiter gave the next send its token: it waits for the token's time,
    /// then goes without asking again.
    pub paced: bool,
    /// The runtime attempt's guard route and its name there: the route's guards hear each
    /// hidden attempt (a LiteLLM cooldown counts every request the router sends).
    pub route: Option<(RouteId, u64)>,
    /// The last hidden attempt's result, while the client sleeps before the next.
    pub last: Option<AttemptResult>,
}

impl SdkSlot {
    pub fn vacant() -> SdkSlot {
        SdkSlot {
            generation: 0,
            live: false,
            run: 0,
            run_gen: 0,
            step: 0,
            serial: 0,
            station: 0,
            purpose: Purpose::Call,
            priority: Priority::Critical,
            measured: false,
            key: StreamKey::root(0),
            tokens: None,
            first_token_at: None,
            attempt_key: false,
            cut_at: Micros::MAX,
            held: None,
            call: SdkCall { retries_taken: 0, retries_allowed: None, quota_taken: None },
            child: None,
            paced: false,
            route: None,
            last: None,
        }
    }
}
