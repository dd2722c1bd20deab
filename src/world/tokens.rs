//! Model calls shaped by tokens (`[dependency.tokens]`): a call's input and output token
//! counts, its service time (time to first token, growing with the prompt, plus output tokens
//! times time per output token), its price, and the provider's quotas.
//!
//! Quotas are continuously replenished buckets that hold one minute's worth, as Anthropic
//! documents its token bucket and OpenAI its per-minute limits: requests per minute, tokens
//! per minute (input and output together), or input and output tokens per minute apart. A
//! request is charged at admission for its input and for the most output it may produce
//! (`max_output_tokens`, or its own output when no maximum is set), as OpenAI counts
//! `max_tokens` against the limit; when its service ends, the output it did not produce is
//! given back. A refusal carries the wait until every bucket could take the request (the
//! provider's retry-after); a request larger than a bucket can ever hold is refused as invalid.

use super::bucket::TokenBucket;
use super::dist::Distribution;
use crate::sim::{KeyedStream, Micros};

/// A call's token counts, drawn once per logical call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallTokens {
    pub input: u32,
    /// What the model produces, after `max_output_tokens`.
    pub output: u32,
    /// The model stopped at `max_output_tokens` (finish reason `length`).
    pub truncated: bool,
}

/// The input tokens a call with a reduced context sends: the drawn count scaled by `share`,
/// rounded up (a context is never cut to nothing); None sends them all.
pub fn reduced_count(tokens: u32, share: Option<f64>) -> u32 {
    match share {
        Some(share) => ((f64::from(tokens) * share).ceil() as u32).clamp(1.min(tokens), tokens),
        None => tokens,
    }
}

impl CallTokens {
    /// Sends `share` of the input (a fallback candidate's context reduction).
    #[inline]
    pub fn reduce_input(&mut self, share: Option<f64>) {
        self.input = reduced_count(self.input, share);
    }
}

/// Per-minute limits of a provider; None is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuotaLimits {
    pub requests_per_minute: Option<f64>,
    pub tokens_per_minute: Option<f64>,
    pub input_tokens_per_minute: Option<f64>,
    pub output_tokens_per_minute: Option<f64>,
}

impl QuotaLimits {
    pub fn any(&self) -> bool {
        self.limits().iter().any(Option::is_some)
    }

    fn limits(&self) -> [Option<f64>; 4] {
        [self.requests_per_minute, self.tokens_per_minute, self.input_tokens_per_minute, self.output_tokens_per_minute]
    }
}

/// Prices in money per token.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenPrices {
    pub input: f64,
    pub output: f64,
    pub cached_input: f64,
    /// The share of input tokens read from the prompt cache.
    pub cache_hit_ratio: f64,
}

/// A token-shaped model dependency, compiled.
#[derive(Debug, Clone)]
pub struct TokenShape {
    pub time_to_first_token: Distribution,
    pub ttft_ms_per_1k_input_tokens: f64,
    pub time_per_output_token: Distribution,
    pub max_output_tokens: Option<u32>,
    /// For callers that declare no token counts of their own.
    pub input_tokens: Option<Distribution>,
    pub output_tokens: Option<Distribution>,
    pub quota: QuotaLimits,
    pub prices: TokenPrices,
}

/// Mixed into an attempt key for its default token counts (apart from the attempt's own draws).
const TOKENS_TAG: u64 = 0x746f_6b65_6e73;

/// A count drawn from a distribution: rounded, at least 0, at most u32::MAX.
pub fn draw_count(distribution: &Distribution, stream: &mut KeyedStream) -> u32 {
    let x = distribution.sample_ms(stream).round();
    if x.is_nan() || x <= 0.0 { 0 } else { x.min(f64::from(u32::MAX)) as u32 }
}

impl TokenShape {
    /// The call's counts: input, then output from the same stream, cut at `max_output_tokens`.
    pub fn draw(&self, input: &Distribution, output: &Distribution, stream: &mut KeyedStream) -> CallTokens {
        let input = draw_count(input, stream);
        let wanted = draw_count(output, stream);
        let output = self.max_output_tokens.map_or(wanted, |max| wanted.min(max));
        CallTokens { input, output, truncated: output < wanted }
    }

    /// A call of a caller that declares no counts (a remote agent's, a task's work): the
    /// model's defaults (or none), drawn from the attempt's key.
    pub fn draw_defaults(&self, key: crate::sim::StreamKey) -> CallTokens {
        const NONE: Distribution = Distribution::Constant { value_ms: 0.0 };
        let input = self.input_tokens.as_ref().unwrap_or(&NONE);
        let output = self.output_tokens.as_ref().unwrap_or(&NONE);
        self.draw(input, output, &mut key.with(TOKENS_TAG).stream())
    }

    /// Service time in ms from the attempt's time to first token and time per output token.
    pub fn service_ms(&self, tokens: CallTokens, ttft_ms: f64, per_token_ms: f64) -> f64 {
        ttft_ms
            + f64::from(tokens.input) / 1000.0 * self.ttft_ms_per_1k_input_tokens
            + f64::from(tokens.output) * per_token_ms
    }

    /// The time to first token alone, for the same draws (what a streaming caller sees first).
    pub fn first_token_ms(&self, tokens: CallTokens, ttft_ms: f64) -> f64 {
        ttft_ms + f64::from(tokens.input) / 1000.0 * self.ttft_ms_per_1k_input_tokens
    }

    /// What the call costs in money when served.
    pub fn price(&self, tokens: CallTokens) -> f64 {
        let p = &self.prices;
        let input = f64::from(tokens.input);
        input * (1.0 - p.cache_hit_ratio) * p.input
            + input * p.cache_hit_ratio * p.cached_input
            + f64::from(tokens.output) * p.output
    }

    /// The output a request is charged for at admission.
    pub fn output_estimate(&self, tokens: CallTokens) -> u32 {
        self.max_output_tokens.unwrap_or(tokens.output)
    }
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaRefusal {
    /// 429: the buckets hold enough again after this long.
    RetryAfter(Micros),
    /// More than a bucket can ever hold: the request can never pass.
    TooLarge,
}

/// A provider's quota buckets at one station, shared by every caller of the provider.
#[derive(Debug, Clone, Default)]
pub struct TokenQuota {
    /// requests, tokens, input tokens, output tokens (the order of `QuotaLimits::limits`).
    buckets: [Option<TokenBucket>; 4],
}

impl TokenQuota {
    /// Full buckets for the limits set.
    pub fn new(limits: &QuotaLimits) -> TokenQuota {
        TokenQuota { buckets: limits.limits().map(|l| l.map(TokenBucket::new)) }
    }

    /// What the request takes from each bucket.
    fn charges(tokens: CallTokens, output_estimate: u32) -> [f64; 4] {
        let (input, output) = (f64::from(tokens.input), f64::from(output_estimate));
        [1.0, input + output, input, output]
    }

    /// Admits the request and charges it, or refuses it and charges nothing.
    pub fn admit(
        &mut self,
        now: Micros,
        limits: &QuotaLimits,
        tokens: CallTokens,
        output_estimate: u32,
    ) -> Result<(), QuotaRefusal> {
        self.admit_scaled(now, limits, 1.0, tokens, output_estimate)
    }

    /// As `admit`, while the provider has cut its quota to `share` of `limits` (a `quota_cut`
    /// fault; 1 is no cut): each bucket holds and refills `share` of its own. A request larger
    /// than the cut bucket but not the real one is a 429 that asks for a minute, the window a
    /// per-minute quota is counted over; one larger than the real bucket stays invalid.
    pub fn admit_scaled(
        &mut self,
        now: Micros,
        limits: &QuotaLimits,
        share: f64,
        tokens: CallTokens,
        output_estimate: u32,
    ) -> Result<(), QuotaRefusal> {
        let charges = Self::charges(tokens, output_estimate);
        let mut wait_us: Micros = 0;
        for ((bucket, limit), n) in self.buckets.iter_mut().zip(limits.limits()).zip(charges) {
            let (Some(bucket), Some(full)) = (bucket, limit) else { continue };
            if n > full {
                return Err(QuotaRefusal::TooLarge);
            }
            let capacity = full * share;
            bucket.refill(now, capacity / 60.0, capacity);
            if n > capacity {
                wait_us = wait_us.max(60_000_000);
            } else if bucket.level() < n {
                wait_us = wait_us.max(bucket.wait_us(n, capacity / 60.0));
            }
        }
        if wait_us > 0 {
            return Err(QuotaRefusal::RetryAfter(wait_us));
        }
        for (bucket, n) in self.buckets.iter_mut().zip(charges) {
            if let Some(bucket) = bucket {
                assert!(bucket.try_take(n), "every bucket was checked to hold its charge");
            }
        }
        Ok(())
    }

    /// Gives back the output a served request was charged for and did not produce.
    pub fn settle(&mut self, now: Micros, limits: &QuotaLimits, output_estimate: u32, output: u32) {
        self.settle_scaled(now, limits, 1.0, output_estimate, output);
    }

    /// As `settle`, while the quota is cut to `share` of `limits`.
    pub fn settle_scaled(&mut self, now: Micros, limits: &QuotaLimits, share: f64, output_estimate: u32, output: u32) {
        let unused = f64::from(output_estimate.saturating_sub(output));
        let refunds = [0.0, unused, 0.0, unused];
        for ((bucket, limit), n) in self.buckets.iter_mut().zip(limits.limits()).zip(refunds) {
            if let (Some(bucket), Some(full)) = (bucket, limit) {
                let capacity = full * share;
                bucket.refill(now, capacity / 60.0, capacity);
                bucket.give_back(n, capacity);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::StreamKey;

    fn constant(value_ms: f64) -> Distribution {
        Distribution::Constant { value_ms }
    }

    fn shape(max_output_tokens: Option<u32>) -> TokenShape {
        TokenShape {
            time_to_first_token: constant(400.0),
            ttft_ms_per_1k_input_tokens: 50.0,
            time_per_output_token: constant(20.0),
            max_output_tokens,
            input_tokens: None,
            output_tokens: None,
            quota: QuotaLimits::default(),
            prices: TokenPrices { input: 3e-6, output: 15e-6, cached_input: 0.3e-6, cache_hit_ratio: 0.5 },
        }
    }

    #[test]
    fn service_is_ttft_with_prefill_plus_output_times_time_per_token() {
        let s = shape(None);
        let tokens = CallTokens { input: 2000, output: 300, truncated: false };
        // 400 + 2 x 50 + 300 x 20
        assert_eq!(s.service_ms(tokens, 400.0, 20.0), 6500.0);
        assert_eq!(s.first_token_ms(tokens, 400.0), 500.0);
    }

    #[test]
    fn output_past_the_maximum_is_cut_and_flagged() {
        let mut stream = StreamKey::root(1).stream();
        let t = shape(Some(256)).draw(&constant(1000.0), &constant(900.0), &mut stream);
        assert_eq!(t, CallTokens { input: 1000, output: 256, truncated: true });
        let t = shape(Some(1024)).draw(&constant(1000.0), &constant(900.0), &mut stream);
        assert_eq!(t, CallTokens { input: 1000, output: 900, truncated: false });
    }

    #[test]
    fn price_splits_cached_input() {
        // 1000 input: 500 at 3e-6, 500 cached at 0.3e-6; 100 output at 15e-6.
        let p = shape(None).price(CallTokens { input: 1000, output: 100, truncated: false });
        assert!((p - (500.0 * 3e-6 + 500.0 * 0.3e-6 + 100.0 * 15e-6)).abs() < 1e-15, "{p}");
    }

    #[test]
    fn counts_are_rounded_and_never_negative() {
        let mut stream = StreamKey::root(1).stream();
        assert_eq!(draw_count(&constant(-5.0), &mut stream), 0);
        assert_eq!(draw_count(&constant(2.5), &mut stream), 3);
        assert_eq!(draw_count(&constant(1e300), &mut stream), u32::MAX);
    }

    fn limits(rpm: Option<f64>, tpm: Option<f64>) -> QuotaLimits {
        QuotaLimits { requests_per_minute: rpm, tokens_per_minute: tpm, ..QuotaLimits::default() }
    }

    #[test]
    fn a_tokens_per_minute_bucket_refuses_with_the_wait_until_it_holds_the_request() {
        let l = limits(None, Some(6000.0)); // 100 tokens a second
        let mut q = TokenQuota::new(&l);
        let t = CallTokens { input: 4000, output: 500, truncated: false };
        assert_eq!(q.admit(0, &l, t, 1000), Ok(())); // 5000 taken, 1000 left
        // 5000 needed, 1000 held: 4000 more at 100/s is 40 s.
        assert_eq!(q.admit(0, &l, t, 1000), Err(QuotaRefusal::RetryAfter(40_000_000)));
        assert_eq!(q.admit(40_000_000, &l, t, 1000), Ok(()));
        // A request larger than the minute's capacity can never pass.
        let huge = CallTokens { input: 7000, output: 0, truncated: false };
        assert_eq!(q.admit(60_000_000, &l, huge, 0), Err(QuotaRefusal::TooLarge));
    }

    #[test]
    fn settling_gives_back_the_unused_output_estimate() {
        let l = limits(None, Some(6000.0));
        let mut q = TokenQuota::new(&l);
        let t = CallTokens { input: 1000, output: 200, truncated: false };
        assert_eq!(q.admit(0, &l, t, 4000), Ok(())); // 5000 taken
        assert!(matches!(q.admit(0, &l, t, 4000), Err(QuotaRefusal::RetryAfter(_))));
        q.settle(0, &l, 4000, 200); // 3800 back: 4800 held
        assert_eq!(q.admit(0, &l, t, 3800), Ok(()));
    }

    #[test]
    fn a_refusal_charges_no_bucket() {
        let l = limits(Some(60.0), Some(1000.0));
        let mut q = TokenQuota::new(&l);
        let t = CallTokens { input: 600, output: 0, truncated: false };
        assert_eq!(q.admit(0, &l, t, 0), Ok(()));
        // The token bucket refuses: the request bucket must keep its 59.
        assert!(q.admit(0, &l, t, 0).is_err());
        for _ in 0..59 {
            assert_eq!(q.admit(0, &l, CallTokens::default(), 0), Ok(()));
        }
        assert_eq!(q.admit(0, &l, CallTokens::default(), 0), Err(QuotaRefusal::RetryAfter(1_000_000)));
    }

    /// Under overload a bucket admits its limit: over 100 simulated minutes of requests
    /// arriving twice as fast as the quota allows, the tokens admitted are the minute's
    /// capacity (the initial full bucket) plus 100 minutes of refill, within one request.
    #[test]
    fn under_overload_a_tokens_per_minute_bucket_admits_its_limit() {
        let l = limits(None, Some(60_000.0)); // 1000 tokens a second
        let mut q = TokenQuota::new(&l);
        let t = CallTokens { input: 400, output: 100, truncated: false };
        let mut admitted = 0u64;
        let step_us = 250_000; // 4 requests a second of 500 tokens: twice the quota
        for i in 0..(100 * 60 * 4) {
            if q.admit(i * step_us, &l, t, 100).is_ok() {
                admitted += 500;
            }
        }
        let last_s = (100 * 60 * 4 - 1) as f64 * 0.25;
        let limit = 60_000.0 + last_s * 1000.0;
        assert!((admitted as f64 - limit).abs() <= 500.0, "{admitted} against {limit}");
    }
}
