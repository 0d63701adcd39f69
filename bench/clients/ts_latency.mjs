// bench/clients/ts_latency.mjs - call one tool N times with the official TypeScript MCP SDK and
// print the latencies, for bench/real_clients.py.
//
//   node ts_latency.mjs --sdk DIR (--stdio CMD ARG... | --http URL [--key KEY])
//        [--calls N] [--concurrency C] [--tool NAME] [--args JSON] [--warmup N]
//
// DIR is an npm prefix holding @modelcontextprotocol/sdk. Prints one JSON object:
// {"protocolVersion", "ping_ms", "samples_ms": [...], "wall_s"}. Every call must succeed (a tool
// error or an exception ends the run with exit 1): a bench of failing calls measures nothing.

import { pathToFileURL } from "node:url";
import path from "node:path";

function parse(argv) {
  const opts = { calls: 200, concurrency: 1, tool: "echo", args: '{"message":"hi"}', warmup: 20 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === "--sdk") opts.sdk = next();
    else if (a === "--http") opts.http = next();
    else if (a === "--key") opts.key = next();
    else if (a === "--calls") opts.calls = Number(next());
    else if (a === "--concurrency") opts.concurrency = Number(next());
    else if (a === "--tool") opts.tool = next();
    else if (a === "--args") opts.args = next();
    else if (a === "--warmup") opts.warmup = Number(next());
    else if (a === "--stdio") {
      opts.stdio = argv.slice(i + 1);
      break;
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!opts.sdk || (!opts.http && !opts.stdio)) throw new Error("need --sdk and --stdio or --http");
  return opts;
}

async function load(sdk, sub) {
  const file = path.join(sdk, "node_modules/@modelcontextprotocol/sdk/dist/esm", sub);
  return import(pathToFileURL(file).href);
}

async function connect(opts) {
  const { Client } = await load(opts.sdk, "client/index.js");
  const client = new Client({ name: "mcp-launch-bench", version: "1.0.0" });
  let transport;
  if (opts.stdio) {
    const { StdioClientTransport } = await load(opts.sdk, "client/stdio.js");
    transport = new StdioClientTransport({
      command: opts.stdio[0],
      args: opts.stdio.slice(1),
      env: process.env,
      stderr: "ignore",
    });
  } else {
    const { StreamableHTTPClientTransport } = await load(opts.sdk, "client/streamableHttp.js");
    const headers = opts.key ? { Authorization: `Bearer ${opts.key}` } : {};
    transport = new StreamableHTTPClientTransport(new URL(opts.http), { requestInit: { headers } });
  }
  await client.connect(transport);
  return { client, transport };
}

async function callOnce(client, opts, args) {
  const started = process.hrtime.bigint();
  const result = await client.callTool({ name: opts.tool, arguments: args });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  return ms;
}

async function main() {
  const opts = parse(process.argv.slice(2));
  const args = JSON.parse(opts.args);
  const { client, transport } = await connect(opts);
  for (let i = 0; i < opts.warmup; i++) await callOnce(client, opts, args);
  const pingStarted = process.hrtime.bigint();
  await client.ping();
  const pingMs = Number(process.hrtime.bigint() - pingStarted) / 1e6;
  const samples = [];
  let next = 0;
  const wallStarted = process.hrtime.bigint();
  const worker = async () => {
    while (next < opts.calls) {
      next++;
      samples.push(await callOnce(client, opts, args));
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const wall = Number(process.hrtime.bigint() - wallStarted) / 1e9;
  const out = {
    protocolVersion: transport.protocolVersion ?? null,
    ping_ms: pingMs,
    samples_ms: samples,
    wall_s: wall,
  };
  process.stdout.write(JSON.stringify(out) + "\n");
  await client.close();
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`ts_latency: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
