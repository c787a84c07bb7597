// pi 1.6.0's half of the hook recorder (hook_recorder.py is this pi's): appends one JSON
// line per observed hook to $HOOK_LOG, and adds /reload-now (ctx.reload() over RPC).
import { appendFileSync } from "node:fs";

const log = (hook, data = {}) => appendFileSync(process.env.HOOK_LOG, JSON.stringify({ hook, ...data }) + "\n");

export default function (pi) {
  pi.on("project_trust", async () => {
    log("project_trust");
    return { trusted: "undecided" };
  });
  pi.on("session_start", async (event) => log("session_start", { reason: event.reason }));
  pi.on("before_provider_headers", async () => log("before_provider_headers"));
  pi.registerCommand("reload-now", {
    description: "Reload",
    handler: async (_args, ctx) => {
      await ctx.reload();
    },
  });
}
