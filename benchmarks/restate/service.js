// Restate counterpart of the DGen benchmark's counter actor.
// A virtual object `Counter` keyed by id:
//   add(n) -> reads state "value", adds n, writes it, returns the new value (exclusive handler)
//   get()  -> returns the current value (shared handler: does not queue behind pending adds)
// Served with the SDK's HTTP endpoint on port 9080 (or $PORT). Default durability, nothing tuned.
"use strict";
// The SDK (1.16.x) calls Promise.withResolvers, which Node only ships from 22; this VM has Node 20.
// Standard polyfill (same semantics as the built-in), installed only where missing.
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}
const restate = require("@restatedev/restate-sdk");

const counter = restate.object({
  name: "Counter",
  handlers: {
    add: async (ctx, n) => {
      const value = ((await ctx.get("value")) ?? 0) + Number(n);
      ctx.set("value", value);
      return value;
    },
    get: restate.handlers.object.shared(async (ctx) => (await ctx.get("value")) ?? 0),
  },
});

const port = Number(process.env.PORT || 9080);
restate
  .serve({ services: [counter], port })
  .then((p) => console.log(`Counter service listening on ${p}`))
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
