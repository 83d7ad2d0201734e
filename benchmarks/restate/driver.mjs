// Load driver for the Restate Counter benchmark (see README.md).
//
//   node driver.mjs [--ingress http://localhost:8080] [--only a,b,c] [--calls N] [--warmup N]
//                   [--messages N] [--workers N] [--keys N] [--json FILE] [--timeout S]
//                   [--poll-concurrency N]
//
// Rows:
//   a  sequential request/response calls to 1 key: POST /Counter/<key>/add (body 1), one at a time
//   b  one-way sends to 1 key from <workers> concurrent workers (POST /Counter/<key>/add/send),
//      then poll get until the counter reaches the total; messages/s from first send to applied
//   c  the same with the sends spread round robin over <keys> keys; every key must reach its count
// Every row uses fresh keys (random run prefix + row name), so reruns never collide.
import http from "node:http";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";

function parseArgs(argv) {
  const o = {
    ingress: "http://localhost:8080",
    only: ["a", "b", "c"],
    calls: 1000,
    warmup: 100,
    messages: 20000,
    workers: 8,
    keys: 1000,
    json: null,
    pollConcurrency: 32,
    timeoutS: 600,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
      return argv[++i];
    };
    switch (a) {
      case "--ingress": o.ingress = next(); break;
      case "--only": o.only = next().split(",").map((s) => s.trim()).filter(Boolean); break;
      case "--calls": o.calls = Number(next()); break;
      case "--warmup": o.warmup = Number(next()); break;
      case "--messages": o.messages = Number(next()); break;
      case "--workers": o.workers = Number(next()); break;
      case "--keys": o.keys = Number(next()); break;
      case "--json": o.json = next(); break;
      case "--timeout": o.timeoutS = Number(next()); break;
      case "--poll-concurrency": o.pollConcurrency = Number(next()); break;
      case "-h": case "--help":
        console.log("node driver.mjs [--ingress URL] [--only a,b,c] [--calls N] [--warmup N] [--messages N] [--workers N] [--keys N] [--json FILE] [--timeout S] [--poll-concurrency N]");
        process.exit(0);
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  for (const r of o.only) if (!["a", "b", "c"].includes(r)) throw new Error(`unknown row ${r}`);
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const base = new URL(opts.ingress);
// One keep-alive agent; enough sockets for the concurrent workers and pollers.
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 });
const runPrefix = `r${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;

function post(path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? "" : JSON.stringify(body);
    const req = http.request(
      {
        host: base.hostname,
        port: base.port || 80,
        path,
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(data),
        },
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode < 200 || res.statusCode >= 300) {
            reject(new Error(`POST ${path} -> ${res.statusCode}: ${text.slice(0, 300)}`));
            return;
          }
          try {
            resolve(text.length ? JSON.parse(text) : null);
          } catch (e) {
            reject(new Error(`POST ${path}: bad JSON ${text.slice(0, 200)}`));
          }
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

const enc = encodeURIComponent;
const add = (key, n) => post(`/Counter/${enc(key)}/add`, n);
const send = (key, n) => post(`/Counter/${enc(key)}/add/send`, n);
const get = (key) => post(`/Counter/${enc(key)}/get`);

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

async function rowA() {
  const key = `${runPrefix}-a`;
  for (let i = 0; i < opts.warmup; i++) await add(key, 1);
  const lat = new Array(opts.calls);
  const t0 = nowMs();
  for (let i = 0; i < opts.calls; i++) {
    const s = nowMs();
    const v = await add(key, 1);
    lat[i] = nowMs() - s;
    if (i === opts.calls - 1 && v !== opts.warmup + opts.calls) {
      throw new Error(`row a: counter is ${v}, expected ${opts.warmup + opts.calls}`);
    }
  }
  const elapsed = nowMs() - t0;
  lat.sort((x, y) => x - y);
  return {
    row: "a",
    name: `sequential add, 1 key (N=${opts.calls}, warm-up ${opts.warmup})`,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    opsPerS: (opts.calls / elapsed) * 1000,
    elapsedMs: elapsed,
  };
}

// Sends messages 0..total-1, message i going to keyOf(i), from `workers` concurrent workers.
async function sendAll(total, keyOf) {
  let next = 0;
  let first = null;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      if (first === null) first = nowMs();
      const r = await send(keyOf(i), 1);
      if (!r || r.status !== "Accepted") {
        throw new Error(`send ${i}: unexpected response ${JSON.stringify(r)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.workers }, worker));
  return { first, sentAt: nowMs() };
}

async function rowB() {
  const key = `${runPrefix}-b`;
  const total = opts.messages;
  const deadline = Date.now() + opts.timeoutS * 1000;
  const { first, sentAt } = await sendAll(total, () => key);
  let v;
  for (;;) {
    v = await get(key);
    if (v === total) break;
    if (v > total) throw new Error(`row b: counter ${v} > ${total}`);
    if (Date.now() > deadline) throw new Error(`row b: timed out at ${v}/${total}`);
    await sleep(10);
  }
  const end = nowMs();
  return {
    row: "b",
    name: `${total} one-way sends, 1 key, ${opts.workers} workers`,
    opsPerS: (total / (end - first)) * 1000,
    elapsedMs: end - first,
    sendPhaseMs: sentAt - first,
    sendRate: (total / (sentAt - first)) * 1000,
  };
}

async function rowC() {
  const total = opts.messages;
  const nKeys = opts.keys;
  const keyName = (k) => `${runPrefix}-c-${k}`;
  const expected = (k) => Math.floor(total / nKeys) + (k < total % nKeys ? 1 : 0);
  const deadline = Date.now() + opts.timeoutS * 1000;
  const { first, sentAt } = await sendAll(total, (i) => keyName(i % nKeys));
  // Wait until every key has its count. To keep polling load low while the backlog drains,
  // first watch the key that received the last message, then sweep all keys (--poll-concurrency
  // gets in flight, default 32); the sweep's time is included in the reported rate (conservative);
  // re-sweep only the keys that were still short until none are left.
  const sentinel = (total - 1) % nKeys;
  for (;;) {
    const v = await get(keyName(sentinel));
    if (v === expected(sentinel)) break;
    if (Date.now() > deadline) throw new Error(`row c: timed out on sentinel at ${v}`);
    await sleep(10);
  }
  const sentinelAt = nowMs();
  let pending = Array.from({ length: nKeys }, (_, k) => k).filter((k) => expected(k) > 0);
  let sweeps = 0;
  while (pending.length) {
    sweeps++;
    const still = [];
    let idx = 0;
    await Promise.all(
      Array.from({ length: opts.pollConcurrency }, async () => {
        for (;;) {
          const j = idx++;
          if (j >= pending.length) return;
          const k = pending[j];
          const v = await get(keyName(k));
          if (v > expected(k)) throw new Error(`row c: key ${k} has ${v} > ${expected(k)}`);
          if (v !== expected(k)) still.push(k);
        }
      }),
    );
    pending = still;
    if (pending.length) {
      if (Date.now() > deadline) throw new Error(`row c: timed out with ${pending.length} keys short`);
      await sleep(10);
    }
  }
  const end = nowMs();
  return {
    row: "c",
    name: `${total} one-way sends, ${nKeys} keys round robin, ${opts.workers} workers`,
    opsPerS: (total / (end - first)) * 1000,
    elapsedMs: end - first,
    sendPhaseMs: sentAt - first,
    sendRate: (total / (sentAt - first)) * 1000,
    sentinelOpsPerS: (total / (sentinelAt - first)) * 1000,
    sweepMs: end - sentinelAt,
    sweeps,
  };
}

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const results = [];
console.log(`run prefix ${runPrefix}, ingress ${opts.ingress}, rows ${opts.only.join(",")}`);
for (const r of opts.only) {
  const res = await { a: rowA, b: rowB, c: rowC }[r]();
  results.push(res);
  const extra =
    res.row === "a"
      ? `p50 ${fmt(res.p50)} ms, p99 ${fmt(res.p99)} ms, ${fmt(res.opsPerS, 0)} calls/s`
      : `${fmt(res.opsPerS, 0)} msgs/s applied (send phase ${fmt(res.sendPhaseMs, 0)} ms = ${fmt(res.sendRate, 0)} sends/s` +
        (res.row === "c"
          ? `; last key applied at ${fmt(res.sentinelOpsPerS, 0)} msgs/s, full sweep ${fmt(res.sweepMs, 0)} ms in ${res.sweeps} pass(es))`
          : ")");
  console.log(`row ${res.row}: ${res.name}: ${extra}`);
}

console.log("");
console.log("| row | p50 ms | p99 ms | ops/s |");
console.log("|---|---:|---:|---:|");
for (const r of results) {
  console.log(`| ${r.row}: ${r.name} | ${r.row === "a" ? fmt(r.p50) : "-"} | ${r.row === "a" ? fmt(r.p99) : "-"} | ${fmt(r.opsPerS, 0)} |`);
}
if (opts.json) writeFileSync(opts.json, JSON.stringify({ runPrefix, opts, results }, null, 2));
agent.destroy();
