// Runs the real opossum 10.0.0 and cockatiel 4.0.0 circuit breakers on the fixed schedules of
// cases.json under Node's mock clock (node:test MockTimers: setTimeout, setInterval and Date),
// so every time is an exact virtual millisecond. Each call's action settles after `duration` ms
// (a success or an Error); the driver records, per call, whether and when the action was invoked
// (admitted) and every state change with its time. Prints one JSON line. Exit 3 when a package
// is missing or not the pinned version (tests/differential_node.rs skips loudly).
import { mock } from 'node:test';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const here = new URL('.', import.meta.url).pathname;
const require = createRequire(here + 'package.json');
const PINS = { opossum: '10.0.0', cockatiel: '4.0.0' };
for (const [name, version] of Object.entries(PINS)) {
  let found;
  try {
    found = require(`${name}/package.json`).version;
  } catch (e) {
    console.log(`${name} is not installed in ${here}node_modules (npm ci): ${e.code}`);
    process.exit(3);
  }
  if (found !== version) {
    console.log(`${name} ${found} is installed, the harness pins ${version}`);
    process.exit(3);
  }
}
const CircuitBreaker = require('opossum');
const cockatiel = await import(require.resolve('cockatiel'));

const cases = JSON.parse(readFileSync(here + 'cases.json', 'utf8'));
const flush = () => new Promise(resolve => setImmediate(resolve));

function action(call) {
  return () =>
    new Promise((resolve, reject) =>
      setTimeout(() => {
        if (call.ok) resolve('ok');
        // `filtered`: an error the breaker is told not to count (faultline's `ignore`).
        else reject(Object.assign(new Error('dependency failed'), { filtered: call.filtered === true }));
      }, call.duration));
}

function makeOpossum(options, log) {
  const dummy = () => Promise.resolve();
  const breaker = new CircuitBreaker(dummy, { ...options, errorFilter: e => e.filtered === true });
  breaker.on('open', () => log.push([Date.now(), 'open']));
  breaker.on('halfOpen', () => log.push([Date.now(), 'half_open']));
  breaker.on('close', () => log.push([Date.now(), 'closed']));
  return {
    fire: fn => {
      breaker.action = fn;
      return breaker.fire();
    },
    stop: () => breaker.shutdown(),
  };
}

function makeCockatiel(options, log) {
  const { circuitBreaker, handleWhen, ConsecutiveBreaker, SamplingBreaker, CircuitState } = cockatiel;
  const breaker =
    options.breaker === 'consecutive'
      ? new ConsecutiveBreaker(options.threshold)
      : new SamplingBreaker({ threshold: options.threshold, duration: options.duration, minimumRps: options.minimumRps });
  const policy = circuitBreaker(handleWhen(e => e.filtered !== true), {
    halfOpenAfter: options.halfOpenAfter,
    breaker,
    halfOpenSampling: options.halfOpenSampling,
  });
  const names = { [CircuitState.Closed]: 'closed', [CircuitState.Open]: 'open', [CircuitState.HalfOpen]: 'half_open', [CircuitState.Isolated]: 'isolated' };
  policy.onStateChange(state => log.push([Date.now(), names[state]]));
  return { fire: fn => policy.execute(fn), stop: () => {} };
}

// cockatiel's bulkhead(limit, queue): a call beyond `limit` running waits in a FIFO queue of
// `queue`, and is refused (BulkheadRejectedError) beyond that.
function makeBulkhead(options) {
  const policy = cockatiel.bulkhead(options.limit, options.queue);
  return { fire: fn => policy.execute(fn), stop: () => {} };
}

const results = [];
for (const c of cases) {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  const transitions = [];
  const breaker =
    c.library === 'opossum'
      ? makeOpossum(c.options, transitions)
      : c.library === 'cockatiel-bulkhead'
        ? makeBulkhead(c.options)
        : makeCockatiel(c.options, transitions);
  const calls = c.calls.map(call => ({ at: call.at, admitted: false, admitted_at: null, refused_at: null }));
  const last = Math.max(...c.calls.map(call => call.at + call.duration)) + (c.tail ?? 500);
  let next = 0;
  for (let now = 0; now <= last; now++) {
    if (now > 0) mock.timers.tick(1);
    await flush();
    while (next < c.calls.length && c.calls[next].at === now) {
      const i = next++;
      const run = action(c.calls[i]);
      breaker
        .fire(() => {
          calls[i].admitted = true;
          calls[i].admitted_at = Date.now();
          return run();
        })
        .catch(e => {
          if (!calls[i].admitted) calls[i].refused_at = Date.now();
        });
      await flush();
    }
    await flush();
  }
  breaker.stop();
  mock.timers.reset();
  results.push({ name: c.name, calls, transitions });
}

// cockatiel's retry(handler, { maxAttempts, backoff }) on one call whose n-th attempt settles
// after `duration` ms as `ok`, a `handled` error or an `unhandled` one (the handler is
// handleWhen(e => !e.unhandled)); attempts past the list repeat its last. Math.random is replaced
// by the case's `draws`, in order, so jittered delays are compared exactly. One timer is pending
// at a time (the attempt's or the backoff's), so runAll advances the mock clock exactly to it.
function backoffOf(b) {
  const { ConstantBackoff, ExponentialBackoff, noJitterGenerator, fullJitterGenerator, halfJitterGenerator } = cockatiel;
  if (!b) return undefined;
  if (b.kind === 'constant') return new ConstantBackoff(b.delay);
  const generators = { none: noJitterGenerator, full: fullJitterGenerator, half: halfJitterGenerator };
  const options = {};
  for (const k of ['initialDelay', 'maxDelay', 'exponent']) if (b[k] !== undefined) options[k] = b[k];
  if (b.generator !== undefined) options.generator = generators[b.generator];
  return new ExponentialBackoff(Object.keys(options).length ? options : undefined);
}

const retryCases = JSON.parse(readFileSync(here + 'retry_cases.json', 'utf8'));
const retries = [];
const random = Math.random;
for (const c of retryCases) {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  let drawn = 0;
  Math.random = () => {
    if (drawn >= c.draws.length) throw new Error(`${c.name}: more than ${c.draws.length} draws`);
    return c.draws[drawn++];
  };
  const policy = cockatiel.retry(cockatiel.handleWhen(e => e.unhandled !== true), {
    maxAttempts: c.maxAttempts,
    backoff: backoffOf(c.backoff),
  });
  const delays = [];
  policy.onRetry(e => delays.push(e.delay));
  const starts = [];
  let settled = null;
  policy
    .execute(() => {
      const a = c.attempts[Math.min(starts.length, c.attempts.length - 1)];
      starts.push(Date.now());
      return new Promise((resolve, reject) =>
        setTimeout(() => {
          if (a.outcome === 'ok') resolve('ok');
          else reject(Object.assign(new Error(a.outcome), { unhandled: a.outcome === 'unhandled' }));
        }, a.duration));
    })
    .then(
      () => (settled = { ok: true, at: Date.now() }),
      e => (settled = { ok: false, error: e.message, at: Date.now() }),
    );
  for (let spins = 0; settled === null; spins++) {
    if (spins > 10000) throw new Error(`${c.name}: never settled`);
    await flush();
    if (settled === null) mock.timers.runAll();
  }
  Math.random = random;
  mock.timers.reset();
  retries.push({ name: c.name, starts, delays, draws: drawn, settled });
}
console.log(JSON.stringify({ node: process.version, cases: results, retries }));
