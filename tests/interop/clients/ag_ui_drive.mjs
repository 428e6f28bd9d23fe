// One step of a conversation with an AG-UI server, driven by the official TypeScript client
// (@ag-ui/client's HttpAgent) for tests/interop/test_ag_ui_client.py. Each event the client
// receives is validated against the protocol's own zod schemas (@ag-ui/core/schemas); the
// client itself checks the order of events (its verifyEvents) and folds them into messages and
// state. Input: a JSON plan file (argv[2]); output: one JSON report on stdout.
//
// plan: {url, threadId, messages, state, tools, action}
//   action: {say: "text"} | {answerFrontend: true, pending: [toolCallId]} |
//           {resume: [{interruptId, approved}]}
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));

// The frontend tools this "application" runs itself when the agent calls them.
const FRONTEND = {
  show_chart: (args) => `chart shown with ${(args.values || []).length} values`,
};

const agent = new HttpAgent({
  url: plan.url,
  threadId: plan.threadId,
  initialMessages: plan.messages || [],
  initialState: plan.state ?? {},
  headers: plan.headers || {},
});

const events = [];
const invalid = [];
let finished = null;
const subscriber = {
  onEvent({ event }) {
    events.push(event);
    const checked = EventSchema.safeParse(event);
    if (!checked.success) {
      invalid.push({ type: event.type, issues: checked.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`) });
    }
  },
  onRunFinishedEvent(params) {
    finished = { outcome: params.outcome, result: params.result ?? null,
                 pendingToolCallIds: params.pendingToolCallIds ?? [],
                 interrupts: params.interrupts ?? [] };
  },
};

const action = plan.action;
const params = { tools: plan.tools || [] };
const executed = [];
if (action.say !== undefined) {
  agent.addMessage({ id: randomUUID(), role: "user", content: action.say });
} else if (action.answerFrontend) {
  const calls = new Map();
  for (const message of agent.messages) {
    for (const call of message.toolCalls || []) calls.set(call.id, call);
  }
  for (const id of action.pending) {
    const call = calls.get(id);
    if (!call) throw new Error(`no tool call ${id} among the client's messages`);
    const run = FRONTEND[call.function.name];
    if (!run) throw new Error(`the client has no frontend tool ${call.function.name}`);
    const content = run(JSON.parse(call.function.arguments || "{}"));
    executed.push({ id, name: call.function.name, content });
    agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: id, content });
  }
} else if (action.resume) {
  params.resume = action.resume.map((r) => ({
    interruptId: r.interruptId, status: r.cancel ? "cancelled" : "resolved",
    payload: { approved: r.approved },
  }));
} else {
  throw new Error(`unknown action ${JSON.stringify(action)}`);
}

const report = { events, invalid, executed };
try {
  const result = await agent.runAgent(params, subscriber);
  report.result = result.result ?? null;
  report.newMessages = result.newMessages;
} catch (error) {
  report.clientError = String(error && error.stack ? error.stack : error);
}
report.finished = finished;
report.messages = agent.messages;
report.state = agent.state;
report.pendingInterrupts = agent.pendingInterrupts;
process.stdout.write(JSON.stringify(report));
