// An editor built on the official ACP TypeScript SDK (@agentclientprotocol/sdk) driving
// `kimi-rs acp`: the SDK parses every message the agent sends with its own schemas, so a
// malformed update or response fails here. Run by crates/cli/tests/acp_sdk.rs with the SDK's
// node_modules folder, the kimi-rs binary and the working directory; prints one JSON object
// with what the editor saw, or exits non-zero with the error.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, bin, cwd] = process.argv.slice(2);
const sdk = await import(pathToFileURL(join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href);

const agentProcess = spawn(bin, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = sdk.ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));
const updates = [];
const asked = [];
// The editor's buffers: a.txt has an unsaved change the agent must see.
const buffers = { [join(cwd, "a.txt")]: "one\n" };
const fsCalls = [];
const seen = { updates, asked, fsCalls, buffers };

const app = sdk.client({ name: "kimi-rs-sdk-test" })
  .onRequest("session/request_permission", async (ctx) => {
    asked.push(ctx.params);
    return { outcome: { outcome: "selected", optionId: "approve_once" } };
  })
  .onRequest("fs/read_text_file", async (ctx) => {
    fsCalls.push(`read ${ctx.params.path}`);
    const content = buffers[ctx.params.path];
    if (content === undefined) throw sdk.RequestError.resourceNotFound(ctx.params.path);
    return { content };
  })
  .onRequest("fs/write_text_file", async (ctx) => {
    fsCalls.push(`write ${ctx.params.path}`);
    buffers[ctx.params.path] = ctx.params.content;
    return {};
  })
  .onNotification("session/update", async (ctx) => {
    updates.push(ctx.params.update);
  });

try {
  await app.connectWith(stream, async (agent) => {
    seen.initialize = await agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    });
    const session = await agent.request("session/new", { cwd, mcpServers: [] });
    seen.session = session;
    seen.prompt = await agent.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "edit a.txt" }],
    });
    seen.mode = await agent.request("session/set_mode", { sessionId: session.sessionId, modeId: "auto" });
    seen.thinking = await agent.request("session/set_config_option", {
      sessionId: session.sessionId,
      configId: "thinking",
      value: "high",
    });
    seen.list = await agent.request("session/list", { cwd });
    seen.close = await agent.request("session/close", { sessionId: session.sessionId });
    seen.resume = await agent.request("session/resume", { sessionId: session.sessionId, cwd, mcpServers: [] });
    seen.delete = await agent.request("session/delete", { sessionId: session.sessionId });
    seen.listAfter = await agent.request("session/list", {});
    seen.logout = await agent.request("logout", {});
  });
} finally {
  agentProcess.stdin.end();
}
const code = await new Promise((resolve) => agentProcess.on("exit", resolve));
seen.exit = code;
console.log(JSON.stringify(seen));
