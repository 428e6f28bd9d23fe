// The board's client: live progress by server-sent events and a streaming chat. No build step.
(function () {
  "use strict";
  const csrf = (document.querySelector("input[name=csrf]") || {}).value || "";

  function describe(ev) {
    const d = ev.data || {};
    switch (ev.kind) {
      case "queued": return "queued: place " + d.position + " in the queue";
      case "state": return "state: " + d.state;
      case "start": return "start: model " + d.model + ", " + d.tools + " tools";
      case "round":
        return "round " + d.round + " · " + d.input_tokens + " in / " + d.output_tokens + " out tokens" +
          (d.calls && d.calls.length ? " · calls " + d.calls.join(", ") : "") + (d.text ? "\n" + d.text : "");
      case "tool":
        return "  " + d.name + "(" + JSON.stringify(d.arguments) + ") " + d.ms + " ms" +
          (d.error ? " ERROR" : "") + "\n  → " + d.result;
      case "result": return "result: " + d.status + (d.reason ? " (" + d.reason + ")" : "");
      case "end": return "ended: " + d.state + (d.reason ? " (" + d.reason + ")" : "");
      default: return ev.kind + ": " + JSON.stringify(d);
    }
  }

  const timeline = document.getElementById("timeline");
  if (timeline) {
    const runId = timeline.dataset.run;
    const stateEl = document.getElementById("run-state");
    const placeEl = document.getElementById("queue-place");
    let tokens = 0;
    const source = new EventSource("/runs/" + runId + "/events");
    // Each (re)connection replays the run from its start (a restarted board too): redraw.
    source.onopen = function () { timeline.textContent = ""; tokens = 0; };
    source.onmessage = function (msg) {
      const ev = JSON.parse(msg.data);
      const li = document.createElement("li");
      li.className = ev.kind;
      li.dataset.seq = ev.seq;
      li.dataset.time = ev.time || "";        // when the run wrote it (the run's local time)
      li.dataset.received = Date.now();       // when this page got it
      li.textContent = describe(ev);
      timeline.appendChild(li);
      timeline.scrollTop = timeline.scrollHeight;
      if (ev.kind === "queued") placeEl.textContent = "· place " + ev.data.position + " in the queue";
      if (ev.kind === "state") { stateEl.textContent = ev.data.state; stateEl.dataset.state = ev.data.state; if (ev.data.state !== "queued") placeEl.textContent = ""; }
      if (ev.kind === "round") {
        tokens += (ev.data.input_tokens || 0) + (ev.data.output_tokens || 0);
        document.getElementById("rounds").textContent = ev.data.round;
        document.getElementById("tokens").textContent = tokens;
      }
      if (ev.kind === "end") {
        stateEl.textContent = ev.data.state; stateEl.dataset.state = ev.data.state;
        if (ev.data.reason) document.getElementById("run-reason").textContent = ev.data.reason;
        source.close();
        // the report, screenshots and diff exist now: show them (once)
        if (!sessionStorage.getItem("ended-" + runId)) { sessionStorage.setItem("ended-" + runId, "1"); location.reload(); }
      }
    };
  }

  const form = document.getElementById("chat-form");
  if (form) {
    form.addEventListener("submit", async function (e) {
      e.preventDefault();
      const chat = document.getElementById("chat");
      const input = form.querySelector("input[name=question]");
      const q = document.createElement("div"); q.className = "q"; q.textContent = input.value; chat.appendChild(q);
      const a = document.createElement("div"); a.className = "a"; chat.appendChild(a);
      const question = input.value;
      const body = new URLSearchParams({ question: question });
      input.value = "";
      const response = await fetch(form.action, {
        method: "POST", body: body, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin",
      });
      if (response.status === 401 || response.status === 403) {
        // The login ended (or another tab logged in again): keep the question for after it.
        input.value = question;
        a.className = "a error";
        a.textContent = "Your login has ended or changed: reload this page (log in again if asked), " +
          "then ask again; your question is still in the box.";
        return;
      }
      if (!response.ok) { a.className = "a error"; a.textContent = await response.text(); return; }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        a.textContent += decoder.decode(value, { stream: true });
      }
      a.dataset.done = "1";
    });
  }
})();
