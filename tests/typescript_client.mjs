// The TypeScript SDK's own Client, in its default mode, driven by tests/test_typescript_client.py.
//
// Reads one job as JSON on stdin and prints one JSON answer on stdout:
//   job:    {sdk, server: {command, args, env} | {url}, offer, calls: [{tool, arguments, settle}], watch}
//   answer: {protocolVersion, tools, answers: [{isError, structuredContent, text}], graph, entity,
//            prompts, prompt, updates}
// `sdk` is the folder the SDK is installed under; `offer` (or null) is the protocol revision the
// client offers instead of its newest, as a client built on an older SDK would; `settle` makes the
// call wait for the embedding worker first (its answer depends on it); `watch` names an entity whose
// resource, and the graph's, the client subscribes to before the calls.
import { pathToFileURL } from "node:url";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const load = (path) => import(pathToFileURL(`${job.sdk}/node_modules/@modelcontextprotocol/sdk/dist/esm/${path}`).href);
const { Client } = await load("client/index.js");
const types = await load("types.js");

let transport;
if (job.server.url) {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(job.server.url));
} else {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({ ...job.server, stderr: "pipe" });
}
if (job.offer) {
  // The SDK offers its newest revision; an older client offers its own.
  const send = transport.send.bind(transport);
  transport.send = (message, options) =>
    send(message.method === "initialize" ? { ...message, params: { ...message.params, protocolVersion: job.offer } } : message, options);
}

// The revision the server agreed on, read off its answer to initialize (the Client keeps it to itself).
let agreed = null;
const start = transport.start.bind(transport);
transport.start = () => {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    agreed ??= message.result?.protocolVersion ?? null;
    deliver(message, extra);
  };
  return start();
};

const updates = [];
const client = new Client({ name: "graphmem-tests", version: "1.0.0" });
client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (notice) => {
  updates.push(notice.params.uri);
});
await client.connect(transport);

const text = (result) => result.content.filter((item) => item.type === "text").map((item) => item.text).join("\n");

async function settle() {
  for (;;) {
    const stats = await client.callTool({ name: "graph_stats", arguments: {} });
    if ((stats.structuredContent?.embedding?.waiting ?? 0) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const answer = { protocolVersion: agreed };
answer.tools = (await client.listTools()).tools.length;
if (job.watch) {
  await client.subscribeResource({ uri: "memory://knowledge-graph" });
  await client.subscribeResource({ uri: `memory://entity/${encodeURIComponent(job.watch)}` });
}
answer.answers = [];
for (const call of job.calls) {
  if (call.settle) await settle();
  const result = await client.callTool({ name: call.tool, arguments: call.arguments });
  answer.answers.push({ isError: result.isError ?? false, structuredContent: result.structuredContent ?? null, text: text(result) });
}
answer.graph = (await client.readResource({ uri: "memory://knowledge-graph" })).contents[0].text;
answer.resources = (await client.listResources()).resources.map((resource) => resource.uri);
answer.prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name).sort();
answer.prompt = (await client.getPrompt({ name: "chat-personalization", arguments: { user: "Ada" } })).messages[0].content.text;
answer.updates = updates;
await client.close();
process.stdout.write(JSON.stringify(answer));
