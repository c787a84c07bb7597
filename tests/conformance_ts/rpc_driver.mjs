// Drives `pi --mode rpc` with pi 1.6.0's own RpcClient (from its npm package, path in
// RPC_CLIENT) through a scripted session (RPC_SCENARIO: "session", "cache_warming" or
// "summary_retry")
// and prints what the client saw as JSON: each command's result and the events of each run.
import { pathToFileURL } from "node:url";

const { RpcClient } = await import(pathToFileURL(process.env.RPC_CLIENT).href);
const client = new RpcClient({
  cliPath: process.env.RPC_SHIM,
  cwd: process.cwd(),
  model: process.env.RPC_MODEL,
});
const out = { steps: [] };
const step = (name, value) => out.steps.push({ name, value: value === undefined ? null : value });
let events = [];
client.onEvent((event) => events.push(event));
const takeEvents = () => {
  const taken = events;
  events = [];
  return taken;
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function cacheWarming() {
  // One answer on a model whose cache lives 11 s: the refresh is due one second later.
  step("prompt_events", await client.promptAndWait("hello"));
  takeEvents();
  await sleep(1600);
  step("entries_after_refresh", await client.getEntries());
  step("refresh_events", takeEvents());
  const stats = await client.getSessionStats();
  step("session_cost", { cost: stats.cost, tokens: stats.tokens });
}

async function summaryRetry() {
  // A compaction whose summary request first meets an overloaded provider.
  step("prompt_events", await client.promptAndWait("hello"));
  takeEvents();
  step("compact", await client.compact());
  step("compact_events", takeEvents());
}

async function models() {
  step("get_available_models", await client.getAvailableModels());
  step("set_model", await client.setModel("local", "think-model"));
  step("cycle_thinking_level", await client.cycleThinkingLevel());
  step("get_state", await client.getState());
  step("model_events", takeEvents());
}

async function queues() {
  // Steering and a follow-up sent while a tool runs.
  const toolStarted = new Promise((resolve) => {
    const off = client.onEvent((event) => {
      if (event.type === "tool_execution_start") {
        off();
        resolve();
      }
    });
  });
  const run = client.collectEvents();
  await client.prompt("run the slow command");
  await toolStarted;
  step("steer", await client.steer("use the other file"));
  step("follow_up", await client.followUp("and then summarise"));
  step("run_events", await run);
  takeEvents();
  step("get_messages", await client.getMessages());
}

async function sessions() {
  // A session, a new one, back to the first, and a clone of it.
  step("prompt_events", await client.promptAndWait("first session"));
  takeEvents();
  const first = await client.getState();
  step("new_session", await client.newSession());
  step("get_state_after_new", await client.getState());
  step("switch_session", await client.switchSession(first.sessionFile));
  step("get_state_after_switch", await client.getState());
  step("messages_after_switch", await client.getMessages());
  step("clone", await client.clone());
  step("get_state_after_clone", await client.getState());
  step("entries_of_clone", await client.getEntries());
  step("session_events", takeEvents());
}

async function session() {
  step("get_state", await client.getState());
  step("get_available_thinking_levels", await client.getAvailableThinkingLevels());
  step("prompt_events", await client.promptAndWait("what is in notes.txt?"));
  takeEvents();
  step("get_last_assistant_text", await client.getLastAssistantText());
  step("get_messages", await client.getMessages());
  step("compact", await client.compact("keep the file names"));
  step("compact_events", takeEvents());
  step("bash", await client.bash("printf '\\033[1;31mred\\033[0m\\r\\nplain\\n'; exit 3"));
  step("bash_events", takeEvents());
  step("set_thinking_level_unknown", await client.setThinkingLevel("extreme"));
  step("get_state_after", await client.getState());
  step("set_session_name", await client.setSessionName("conformance"));
  step("state_events", takeEvents());
  step("get_entries", await client.getEntries());
  step("get_tree", await client.getTree());
  step("get_fork_messages", await client.getForkMessages());
  step("get_session_stats", await client.getSessionStats());
  // An aborted run: the slow tool is stopped and the run ends with the empty aborted
  // assistant message pi 1.6.0 records.
  const toolStarted = new Promise((resolve) => {
    const off = client.onEvent((event) => {
      if (event.type === "tool_execution_start") {
        off();
        resolve();
      }
    });
  });
  const abortedRun = client.collectEvents();
  await client.prompt("run the slow command");
  await toolStarted;
  await client.abort();
  step("aborted_run_events", await abortedRun);
  takeEvents();
  step("get_messages_after_abort", await client.getMessages());
}

try {
  await client.start();
  const scenarios = { cache_warming: cacheWarming, summary_retry: summaryRetry, models, queues, sessions, session };
  await scenarios[process.env.RPC_SCENARIO ?? "session"]();
} catch (error) {
  out.error = String(error && error.message ? error.message : error);
} finally {
  await client.stop();
}
process.stdout.write(JSON.stringify(out) + "\n");
