/* The submission page, live: stage progress and verdict follow the evaluation over /ws/submissions/<id>/.
 * Headline fields are updated from each event at once; when the evaluation finishes (or a re-run starts) the
 * evaluation part of the page is fetched again (?partial=evaluation) for its statistics and logs.
 * stageSteps mirrors stage_steps in apps/submissions/templatetags/kernelhub.py: keep them in step.
 */
(function () {
  "use strict";
  var root = document.getElementById("evaluation-live");
  if (!root || !window.KernelHub) { return; }
  var submissionId = root.getAttribute("data-submission-id");

  var STEPS = [["queued", "Queued"], ["prescreen", "Pre-screen"], ["compiling", "Compiling"], ["checking", "Checking correctness"],
               ["timing", "Timing"], ["verdict", "Verdict"]];
  var VERDICTS = {accepted: "Accepted", wrong_answer: "Wrong answer", compile_error: "Compile error",
                  runtime_error: "Runtime error", timeout: "Time limit exceeded", rejected: "Rejected"};
  var FAILED_AT = {compile_error: "compiling", wrong_answer: "checking", runtime_error: "checking"};
  var STAGE_LABELS = {queued: "Queued", prescreen: "Pre-screen", compiling: "Compiling", checking: "Checking correctness",
                      timing: "Timing", running: "Running", done: "Done"};
  var QUEUE_REFRESH_MS = 15000;
  var keys = STEPS.map(function (s) { return s[0]; });
  var LAST = keys.length - 1;  // the verdict step

  function stageSteps(status, stage, verdict) {
    var steps = STEPS.map(function (s) { return {key: s[0], label: s[1], state: "pending"}; });
    if (status === "queued" || status === "running") {
      var current = keys.slice(0, LAST).indexOf(stage);
      if (current < 0) { current = status === "queued" ? 0 : LAST - 1; }
      steps.forEach(function (s, i) { s.state = i < current ? "done" : (i === current ? "current" : "pending"); });
      return steps;
    }
    if (status === "failed") {
      steps[0].state = "done";
      steps[LAST].state = "failed"; steps[LAST].label = "No verdict";
      return steps;
    }
    var last = FAILED_AT[verdict] ? keys.indexOf(FAILED_AT[verdict]) : LAST;
    for (var i = 0; i < LAST; i++) { steps[i].state = i < last ? "done" : (i === last ? "failed" : "pending"); }
    steps[LAST].state = verdict === "accepted" ? "done" : "failed";
    steps[LAST].label = VERDICTS[verdict] || "Verdict";
    return steps;
  }

  function fmtUs(v) {
    if (v === null || v === undefined || v === "") { return "–"; }
    v = Number(v);
    if (v >= 1e6) { return (v / 1e6).toFixed(2) + " s"; }
    if (v >= 1e3) {
      var ms = v / 1e3;
      return ms.toFixed(ms < 10 ? 2 : (ms < 100 ? 1 : 0)) + " ms";
    }
    return v.toFixed(v < 10 ? 2 : (v < 100 ? 1 : 0)) + " µs";
  }
  function fmtSpeedup(v) { return (v === null || v === undefined) ? "–" : Number(v).toFixed(2) + "×"; }

  function badge(ev) {
    var span = document.createElement("span");
    span.className = "badge badge-lg";
    if (ev.status === "failed") {
      span.className += " status-failed"; span.textContent = "No verdict: runner failure";
    } else if (ev.verdict) {
      span.className += " verdict-" + ev.verdict; span.textContent = VERDICTS[ev.verdict] || ev.verdict;
    } else {
      span.className += " status-" + ev.status;
      var spin = document.createElement("span"); spin.className = "spinner";
      span.appendChild(spin);
      span.appendChild(document.createTextNode(STAGE_LABELS[ev.stage || ev.status] || ev.stage));
    }
    return span;
  }

  function setField(name, text, cls) {
    root.querySelectorAll('[data-field="' + name + '"]').forEach(function (el) {
      if (el.textContent === text) { return; }  // flash only what changed
      el.textContent = text;
      if (cls !== undefined) {
        el.classList.remove("speedup-good", "speedup-bad");
        if (cls) { el.classList.add(cls); }
      }
      el.classList.remove("flash"); void el.offsetWidth; el.classList.add("flash");
    });
  }
  function speedupClass(v) { return (v === null || v === undefined) ? "" : (v >= 1 ? "speedup-good" : "speedup-bad"); }

  function apply(ev) {
    var head = document.getElementById("verdict-head");
    head.replaceChildren(badge(ev));
    var bar = root.querySelector("[data-stages]");
    if (bar) {
      stageSteps(ev.status, ev.stage, ev.verdict).forEach(function (s) {
        var li = bar.querySelector('[data-stage="' + s.key + '"]');
        if (li) { li.className = "is-" + s.state; li.textContent = s.label; }
      });
    }
    setField("runtime_us", fmtUs(ev.runtime_us));
    setField("eager_us", fmtUs(ev.eager_us));
    setField("compile_us", fmtUs(ev.compile_us));
    setField("speedup_vs_eager", fmtSpeedup(ev.speedup_vs_eager), speedupClass(ev.speedup_vs_eager));
    setField("speedup_vs_compile", fmtSpeedup(ev.speedup_vs_compile), speedupClass(ev.speedup_vs_compile));
  }

  function refresh() {
    // The server decides what this viewer may see (messages and logs can quote private source).
    var url = window.location.pathname + "?partial=evaluation";
    fetch(url, {credentials: "same-origin", headers: {"X-Requested-With": "fetch"}})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (html) {
        root.innerHTML = html;
        setIndicator(lastState);
      })
      .catch(function (e) { if (window.console) { console.error("refresh failed", e); } });
  }

  var lastState = "connecting";
  function setIndicator(state) {
    lastState = state;
    var el = document.getElementById("live-indicator");
    if (el) { el.setAttribute("data-state", state); el.textContent = state === "open" ? "live" : (state === "closed" ? "reconnecting…" : "connecting…"); }
  }

  window.KernelHub.live("/ws/submissions/" + submissionId + "/", function (msg) {
    if (!msg || msg.type !== "evaluation.update" || !msg.evaluation) { return; }
    var ev = msg.evaluation;
    var current = root.getAttribute("data-evaluation-id");
    // An event of an older evaluation must not overwrite a newer one shown here.
    if (current && Number(ev.id) < Number(current)) { return; }
    var isNew = String(ev.id) !== current;
    var moved = ev.status + "/" + ev.stage;
    root.setAttribute("data-evaluation-id", String(ev.id));
    apply(ev);
    // Each change of status or stage re-fetches the evaluation part: "Where it ran" (the runner that claimed
    // it, start time), the queue position and, at the end, statistics and logs.
    if (isNew || moved !== lastMoved) { lastMoved = moved; refresh(); }
  }, {onState: setIndicator});

  var lastMoved = root.querySelector("[data-status]") ? root.querySelector("[data-status]").getAttribute("data-status") : "";
  // While it waits, the queue moves without this submission's events (others are claimed and finish):
  // re-read its position now and then.
  window.setInterval(function () {
    if (root.querySelector("#queue-position") && document.visibilityState === "visible") { refresh(); }
  }, QUEUE_REFRESH_MS);
})();
