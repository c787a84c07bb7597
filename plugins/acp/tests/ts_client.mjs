// An independent ACP client: the official TypeScript SDK (@agentclientprotocol/sdk)
// drives `pi acp` through one session: initialize, session/new, a prompt whose tool
// calls need a permission and write through fs/write_text_file, an unknown method.
//   node ts_client.mjs CWD COMMAND [ARGS...]   (prints a JSON summary on stdout)
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [cwd, command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const permissions = [];
const writes = [];
const app = acp
  .client({ name: "pi-acp-ts-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    return { outcome: { outcome: "selected", optionId: "allow" } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => ({ content: readFileSync(params.path, "utf8") }))
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    writes.push(params);
    writeFileSync(params.path, params.content);
    return {};
  });
const result = await app.connectWith(stream, async (agent) => {
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  });
  const session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const prompt = await agent.request(acp.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "go" }],
  });
  let unknown = null;
  try {
    await agent.request("session/teleport", {});
  } catch (error) {
    unknown = error.code ?? String(error);
  }
  const listed = await agent.request(acp.methods.agent.session.list, { cwd });
  return { init, session, prompt, unknown, listed };
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify({ ...result, updates, permissions, writes, exitCode: child.exitCode }));
