// Drives the loopkit UI server with the MCP TypeScript SDK's client (a client implementation
// nobody in this project wrote): lists the tools, calls each one of the plan, reads every
// resource the answers link, and prints what it got as one JSON document on stdout.
//
//   node drive.mjs PLAN.json
//
// PLAN: {"transport": "stdio", "command": ..., "args": [...], "env": {...}, "cwd": ...}
//    or {"transport": "http", "url": ..., "token": ...}, plus "calls": [{"name", "arguments"}].
// The SDK's own client checks each structuredContent against the tool's outputSchema (Ajv)
// and throws when it does not match: such a call is reported with "clientError".
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const transport =
  plan.transport === "http"
    ? new StreamableHTTPClientTransport(new URL(plan.url), {
        requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
      })
    : new StdioClientTransport({
        command: plan.command,
        args: plan.args,
        env: plan.env,
        cwd: plan.cwd,
        stderr: "inherit",
      });

const client = new Client({ name: "loopkit-outside-check", version: "1.0.0" });
const report = { tools: [], calls: [], resources: [] };
try {
  await client.connect(transport);
  report.serverInfo = client.getServerVersion();
  report.protocolVersion = transport.protocolVersion ?? null;
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    report.tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const links = [];
  for (const call of plan.calls) {
    const entry = { name: call.name, arguments: call.arguments };
    try {
      // Every call asks for progress notifications (a progress token); long typing sends them.
      entry.progress = [];
      const result = await client.callTool(
        { name: call.name, arguments: call.arguments },
        undefined,
        { onprogress: (p) => entry.progress.push(p), timeout: 120000 },
      );
      entry.isError = Boolean(result.isError);
      entry.structuredContent = result.structuredContent ?? null;
      entry.content = result.content;
      for (const block of result.content) {
        if (block.type === "resource_link") links.push(block.uri);
      }
    } catch (error) {
      entry.clientError = String(error?.message ?? error);
    }
    report.calls.push(entry);
  }
  for (const uri of links) {
    try {
      const read = await client.readResource({ uri });
      const [item] = read.contents;
      report.resources.push({
        uri,
        mimeType: item.mimeType,
        size: item.blob !== undefined ? Buffer.from(item.blob, "base64").length : Buffer.byteLength(item.text),
      });
    } catch (error) {
      report.resources.push({ uri, clientError: String(error?.message ?? error) });
    }
  }
} catch (error) {
  report.fatal = String(error?.stack ?? error);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(report));
