// The official AG-UI client, @ag-ui/client's HttpAgent, runs a task against PowerOn's AG-UI
// endpoint: the first run ends with an approval interrupt, the next resumes it approved. The
// client checks the protocol's order itself (a violation fails the run). Prints one JSON line:
// each run's event types, the interrupts, and the agent's messages and state at the end.
//
//   node tests/agui/httpagent.mjs URL TOKEN THREAD_ID DOCUMENT_ID
import { HttpAgent } from "@ag-ui/client";

const [url, token, threadId, documentId] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${token}` } });
agent.setMessages([{ id: "user-1", role: "user", content: "Summarise the notes" }]);

const runs = [];
const recording = () => {
  const seen = [];
  runs.push(seen);
  return { onEvent: ({ event }) => void seen.push(event.type) };
};

const poweron = { documents: [Number(documentId)] };
await agent.runAgent({ forwardedProps: { poweron } }, recording());
const interrupts = agent.pendingInterrupts;
const resume = interrupts.map((interrupt) => ({
  interruptId: interrupt.id,
  status: "resolved",
  payload: { approved: true },
}));
const result = await agent.runAgent({ resume }, recording());

console.log(
  JSON.stringify({
    runs,
    interrupts,
    pending: agent.pendingInterrupts,
    result: result.result,
    messages: agent.messages,
    state: agent.state,
  }),
);
