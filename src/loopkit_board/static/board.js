// The board's client: one event stream a page, the live parts fetched again when they change,
// the run's timeline (filters, steps to expand), approvals and the streaming chat. No build.
(function () {
  "use strict";
  const csrf = (document.querySelector("input[name=csrf]") || {}).value || "";
  const live = document.body.dataset.live || "";

  // -- a live part: fetched again (the page's own URL, ?part=NAME) and swapped in ------------
  const fetching = {};
  async function refresh(element, part) {
    if (!element) return;
    if (fetching[part]) { fetching[part] = "again"; return; }
    fetching[part] = "busy";
    try {
      do {
        fetching[part] = "busy";
        const url = new URL(location.href);
        url.searchParams.set("part", part);
        url.searchParams.delete("message");
        const response = await fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
        if (!response.ok || response.redirected) return;  // a login ended: the page says so on reload
        const html = await response.text();
        swap(element, html);
      } while (fetching[part] === "again");
    } finally {
      fetching[part] = null;
    }
  }

  function swap(element, html) {
    // Keep the keyboard where it was: the same control (id, card, run) gets the focus back.
    const active = document.activeElement;
    let key = null;
    if (active && element.contains(active)) {
      key = active.id ? "#" + CSS.escape(active.id)
        : active.dataset.card ? "[data-card='" + CSS.escape(active.dataset.card) + "']"
        : active.getAttribute("href") ? "[href='" + CSS.escape(active.getAttribute("href")) + "']" : null;
    }
    element.setAttribute("aria-busy", "true");
    element.innerHTML = html;
    element.setAttribute("aria-busy", "false");
    element.dataset.refreshed = String(Number(element.dataset.refreshed || 0) + 1);
    element.dataset.refreshedAt = String(Date.now());
    if (key) { const again = element.querySelector(key); if (again) again.focus(); }
    wireApprovals();
  }

  // -- every page but a run's: the board's stream ---------------------------------------------
  if (live === "board") {
    const region = document.getElementById("live");
    let opened = 0;
    const source = new EventSource("/events");
    source.onopen = function () { opened += 1; if (opened > 1) refresh(region, "live"); };  // back after a restart
    source.onmessage = function (msg) {
      const change = JSON.parse(msg.data);
      if ((change.cards && change.cards.length) || (change.runs && change.runs.length)) refresh(region, "live");
    };
  }

  // -- a run's page ----------------------------------------------------------------------------
  function text(value) { return typeof value === "string" ? value : JSON.stringify(value); }
  function short(value, n) { const s = text(value); return s.length > n ? s.slice(0, n) + "…" : s; }

  function summary(ev) {
    const d = ev.data || {};
    switch (ev.kind) {
      case "queued": return "queued: place " + d.position + " in the queue";
      case "state": return "state: " + d.state;
      case "start": return "start: model " + d.model + ", " + d.tools + " tools";
      case "round":
        return "round " + d.round + " · " + d.input_tokens + " in / " + d.output_tokens + " out tokens" +
          (d.calls && d.calls.length ? " · calls " + d.calls.join(", ") : "");
      case "tool":
        return d.name + "(" + short(d.arguments, 80) + ") " + d.ms + " ms" + (d.error ? " ERROR" : "");
      case "approval_requested": return "waiting for a person's approval of " + d.name + " (approval " + d.number + ")";
      case "approval": return "approval " + d.number + " of " + d.name + ": " + (d.approved ? "approved" : "refused") + " by " + d.by + (d.note ? " (" + d.note + ")" : "");
      case "result": return "result: " + d.status + (d.reason ? " (" + d.reason + ")" : "");
      case "end": return "ended: " + d.state + (d.reason ? " (" + d.reason + ")" : "");
      case "files": return "files: " + d.count + " pictures and reports";
      default: return ev.kind + ": " + short(d, 300);
    }
  }

  function detail(ev) {
    const d = ev.data || {};
    if (ev.kind === "round") return d.text || "";
    if (ev.kind === "tool") return "arguments: " + JSON.stringify(d.arguments, null, 2) + "\n→ " + text(d.result);
    if (ev.kind === "approval_requested") return "arguments: " + JSON.stringify(d.arguments, null, 2);
    return "";
  }

  function group(ev) {
    if (ev.kind === "round") return "rounds";
    if (ev.kind === "tool") return "tools";
    return "other";
  }

  function isError(ev) {
    const d = ev.data || {};
    return (ev.kind === "tool" && d.error) || ev.kind === "error" ||
      (ev.kind === "result" && d.status !== "done") || (ev.kind === "end" && d.state !== "done") ||
      (ev.kind === "approval" && !d.approved);
  }

  const timeline = document.getElementById("timeline");
  function applyFilter() {
    if (!timeline) return;
    const shown = {
      rounds: document.getElementById("show-rounds").checked,
      tools: document.getElementById("show-tools").checked,
      other: document.getElementById("show-other").checked,
    };
    const errorsOnly = document.getElementById("only-errors").checked;
    const words = document.getElementById("timeline-filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    let visible = 0;
    for (const li of timeline.children) {
      const haystack = li.textContent.toLowerCase();
      const ok = shown[li.dataset.group] && (!errorsOnly || li.dataset.error === "1") &&
        words.every(function (w) { return haystack.includes(w); });
      li.hidden = !ok;
      if (ok) visible += 1;
    }
    document.getElementById("timeline-count").textContent = visible + " of " + timeline.children.length + " steps shown";
  }

  if (timeline) {
    const runId = timeline.dataset.run;
    const stateEl = document.getElementById("run-state");
    const placeEl = document.getElementById("queue-place");
    const note = document.querySelector("#message[data-queue-note]");
    const files = document.getElementById("run-files");
    const actions = document.getElementById("run-actions");
    const approvals = document.getElementById("approvals-box");
    const links = document.getElementById("run-links");  // the report and the logs, once started
    let tokens = 0;
    let ended = false;
    for (const id of ["show-rounds", "show-tools", "show-other", "only-errors"]) document.getElementById(id).addEventListener("change", applyFilter);
    document.getElementById("timeline-filter").addEventListener("input", applyFilter);
    document.getElementById("expand-all").addEventListener("click", function () { for (const d of timeline.querySelectorAll("details")) d.open = true; });
    document.getElementById("collapse-all").addEventListener("click", function () { for (const d of timeline.querySelectorAll("details")) d.open = false; });

    function setState(state) {
      const was = stateEl.dataset.state;
      stateEl.textContent = state; stateEl.dataset.state = state;
      if (state !== "queued") {
        placeEl.textContent = "";
        if (note && note.isConnected) note.remove();  // "Queued (place N ...)" is over
      }
      if (was !== state) { refresh(actions, "actions"); refresh(links, "links"); }
    }

    const source = new EventSource("/runs/" + runId + "/events");
    // Each (re)connection replays the run from its start (a restarted board too): redraw.
    source.onopen = function () { timeline.textContent = ""; tokens = 0; };
    source.onmessage = function (msg) {
      const ev = JSON.parse(msg.data);
      const li = document.createElement("li");
      li.className = ev.kind + (isError(ev) ? " error-item" : "");
      li.dataset.seq = ev.seq;
      li.dataset.group = group(ev);
      li.dataset.error = isError(ev) ? "1" : "0";
      li.dataset.time = ev.time || "";        // when the run wrote it (the run's local time)
      li.dataset.received = Date.now();       // when this page got it
      const more = detail(ev);
      if (more) {
        const details = document.createElement("details");
        const sum = document.createElement("summary");
        sum.textContent = summary(ev);
        const pre = document.createElement("pre");
        pre.textContent = more;
        details.append(sum, pre);
        li.append(details);
      } else {
        li.textContent = summary(ev);
      }
      const atBottom = timeline.scrollTop + timeline.clientHeight >= timeline.scrollHeight - 40;
      timeline.appendChild(li);
      if (atBottom) timeline.scrollTop = timeline.scrollHeight;
      applyFilter();
      if (ev.kind === "queued") {
        placeEl.textContent = "· place " + ev.data.position + " in the queue";
        if (note && note.isConnected) note.textContent = note.textContent.replace(/place \d+ in the queue/, "place " + ev.data.position + " in the queue");
      }
      if (ev.kind === "state") setState(ev.data.state);
      if (ev.kind === "round") {
        tokens += (ev.data.input_tokens || 0) + (ev.data.output_tokens || 0);
        document.getElementById("rounds").textContent = ev.data.round;
        document.getElementById("tokens").textContent = tokens;
      }
      if (ev.kind === "approval_requested" || ev.kind === "approval") refresh(approvals, "approvals");
      if (ev.kind === "files") refresh(files, "files");
      if (ev.kind === "start") refresh(links, "links");
      if (ev.kind === "end" && !ended) {
        ended = true;
        setState(ev.data.state);
        if (ev.data.reason) document.getElementById("run-reason").textContent = ev.data.reason;
        source.close();
        // the report, the diff, the GIF exist now: show them, no reload
        refresh(files, "files");
        refresh(actions, "actions");
        refresh(approvals, "approvals");
        refresh(links, "links");
      }
    };
  }

  // -- approvals: answered without leaving the page (the run's stream shows the answer) -------
  function wireApprovals() {
    for (const form of document.querySelectorAll("form.approval-form:not([data-wired])")) {
      form.dataset.wired = "1";
      form.addEventListener("submit", async function (e) {
        e.preventDefault();
        const body = new URLSearchParams(new FormData(form));
        if (e.submitter && e.submitter.name) body.set(e.submitter.name, e.submitter.value);
        for (const b of form.querySelectorAll("button")) b.disabled = true;
        const response = await fetch(form.action, {
          method: "POST", body: body, credentials: "same-origin",
          headers: { "X-CSRF-Token": csrf, "X-Requested-With": "fetch" },
        });
        const said = document.createElement("span");
        said.setAttribute("role", "status");
        said.textContent = response.ok ? await response.text() : "Not answered: " + await response.text();
        form.append(said);
        if (!response.ok) for (const b of form.querySelectorAll("button")) b.disabled = false;
      });
    }
  }
  wireApprovals();

  // -- the chat -----------------------------------------------------------------------------
  const form = document.getElementById("chat-form");
  if (form) {
    form.addEventListener("submit", async function (e) {
      e.preventDefault();
      const chat = document.getElementById("chat");
      const input = form.querySelector("input[name=question]");
      const q = document.createElement("div"); q.className = "q"; q.textContent = input.value; chat.appendChild(q);
      const a = document.createElement("div"); a.className = "a"; a.setAttribute("aria-busy", "true"); chat.appendChild(a);
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
        a.setAttribute("aria-busy", "false");
        return;
      }
      if (!response.ok) { a.className = "a error"; a.textContent = await response.text(); a.setAttribute("aria-busy", "false"); return; }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        a.textContent += decoder.decode(value, { stream: true });
      }
      a.setAttribute("aria-busy", "false");
      a.dataset.done = "1";
    });
  }
})();
