/* Leaderboard pages: draw the plotly figures built by apps/leaderboard/plots.py, sort tables, and keep the
 * board live: on `leaderboard.updated` (websocket /ws/leaderboard/<pool>/) re-fetch the rows from the API and
 * update the table in place, flashing the rows that changed. Number formats mirror
 * apps/leaderboard/templatetags/leaderboard.py and the `speedup` filter: keep them in step.
 */
(function () {
  "use strict";

  // --- plots -------------------------------------------------------------------------------------------
  function drawPlots(root) {
    if (!window.Plotly) { return; }
    var style = getComputedStyle(document.body);
    var text = style.color;
    var grid = style.getPropertyValue("--border").trim() || "#dde1e7";
    (root || document).querySelectorAll("[data-figure]").forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-figure"));
      if (!source) { return; }
      var fig = JSON.parse(source.textContent);
      var layout = fig.layout || {};
      // Follow the page's light or dark colours: plotly cannot read CSS variables itself.
      layout.font = Object.assign({ color: text, family: style.fontFamily }, layout.font || {});
      ["xaxis", "yaxis", "yaxis2"].forEach(function (axis) {
        if (layout[axis] || axis !== "yaxis2") {
          layout[axis] = Object.assign({ gridcolor: grid, zerolinecolor: grid, linecolor: grid }, layout[axis] || {});
        }
      });
      window.Plotly.newPlot(el, fig.data, layout, { responsive: true, displaylogo: false,
        modeBarButtonsToRemove: ["lasso2d", "select2d"] });
    });
  }

  // --- sortable tables ---------------------------------------------------------------------------------
  function cellValue(row, index, type) {
    var cell = row.children[index];
    var raw = cell ? (cell.getAttribute("data-value") || "") : "";
    if (type === "num") { return raw === "" ? null : parseFloat(raw); }
    return raw.toLowerCase();
  }

  function sortTable(table, index, type, descending) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, type), y = cellValue(b, index, type);
      if (x === y) { return 0; }
      if (x === null || x === "") { return 1; }   // empty values last, whatever the direction
      if (y === null || y === "") { return -1; }
      var order = x < y ? -1 : 1;
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function currentSort(table) {
    var th = table.querySelector("th[aria-sort]");
    if (!th) { return null; }
    return { th: th, descending: th.getAttribute("aria-sort") === "descending" };
  }

  function applySort(table) {
    var sort = currentSort(table);
    if (!sort) { return; }
    var index = Array.prototype.indexOf.call(sort.th.parentNode.children, sort.th);
    sortTable(table, index, sort.th.getAttribute("data-type"), sort.descending);
  }

  function makeSortable(table) {
    table.querySelectorAll("th[data-sort]").forEach(function (th) {
      th.tabIndex = 0;
      th.setAttribute("role", "button");
      function activate() {
        var was = th.getAttribute("aria-sort");
        table.querySelectorAll("th[aria-sort]").forEach(function (other) { other.removeAttribute("aria-sort"); });
        // Numbers start high-to-low (best first), text A-to-Z; a second click reverses.
        var firstDescending = th.getAttribute("data-type") === "num" && th.getAttribute("data-sort") !== "rank";
        var descending = was ? was === "ascending" : firstDescending;
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        applySort(table);
      }
      th.addEventListener("click", activate);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); activate(); } });
    });
  }

  // --- formats -----------------------------------------------------------------------------------------
  function pct(v) { return v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%"; }
  function speedup(v) { return v === null || v === undefined ? "–" : v.toFixed(2) + "×"; }
  function speedupClass(v) { return v === null || v === undefined ? "" : (v >= 1 ? "speedup-good" : "speedup-bad"); }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function when(iso) {
    if (!iso) { return "–"; }
    var d = new Date(iso);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
  }
  var KIND_LABELS = { agent: "RL agent", llm: "LLM", human: "Human", baseline: "Baseline" };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }

  // The cells of one row, built from an API row: [field, sort value, content nodes].
  function cellsFor(row, showP, entrantUrl) {
    function geomean(v, n) {
      return [el("span", { "class": speedupClass(v) }, [speedup(v)]), " ", el("span", { "class": "muted small" }, ["(" + n + ")"])];
    }
    var cells = [
      ["rank", row.rank, [String(row.rank)]],
      ["entrant", row.entrant, [el("a", { href: entrantUrl.replace("__slug__", row.entrant_slug) }, [row.entrant]), " ",
        el("span", { "class": "badge kind-" + row.kind }, [KIND_LABELS[row.kind] || row.kind])]],
      ["fast_0", row.fast_0, [pct(row.fast_0)]],
      ["fast_1_vs_eager", row.fast_1_vs_eager, [pct(row.fast_1_vs_eager)]],
      ["fast_1_vs_compile", row.fast_1_vs_compile, [pct(row.fast_1_vs_compile)]]
    ];
    if (showP) {
      cells.push(["fast_p_vs_eager", row.fast_p_vs_eager, [pct(row.fast_p_vs_eager)]]);
      cells.push(["fast_p_vs_compile", row.fast_p_vs_compile, [pct(row.fast_p_vs_compile)]]);
    }
    cells.push(["geomean_speedup_vs_eager", row.geomean_speedup_vs_eager, geomean(row.geomean_speedup_vs_eager, row.geomean_count_vs_eager)]);
    cells.push(["geomean_speedup_vs_compile", row.geomean_speedup_vs_compile, geomean(row.geomean_speedup_vs_compile, row.geomean_count_vs_compile)]);
    cells.push(["solved", row.solved, [row.solved + " / " + row.attempted]]);
    cells.push(["last_result_at", row.last_result_at, row.last_result_at ?
      [el("time", { datetime: row.last_result_at, title: row.last_result_at }, [when(row.last_result_at)])] : ["–"]]);
    return cells;
  }

  function renderRow(tr, row, showP, entrantUrl) {
    var changed = false;
    var cells = cellsFor(row, showP, entrantUrl);
    cells.forEach(function (spec, i) {
      var td = tr.children[i];
      if (!td) {
        td = el("td", { "data-field": spec[0] });
        if (spec[0] !== "entrant") { td.className = "num"; }
        tr.appendChild(td);
      }
      var value = spec[1] === null || spec[1] === undefined ? "" : String(spec[1]);
      var fresh = el("td", {}, spec[2]);
      if (td.getAttribute("data-value") !== value || td.textContent !== fresh.textContent) {
        // What a reader sees changed (not float noise). A rank shifted by someone else's result, or a newer
        // timestamp on the same numbers, is not this row's news.
        if (td.textContent !== fresh.textContent && spec[0] !== "rank" && spec[0] !== "last_result_at") {
          changed = true;
        }
        td.setAttribute("data-value", value);
        while (td.firstChild) { td.removeChild(td.firstChild); }
        while (fresh.firstChild) { td.appendChild(fresh.firstChild); }
      }
    });
    return changed;
  }

  function flash(tr) {
    tr.classList.remove("flash");
    void tr.offsetWidth;  // restart the CSS animation
    tr.classList.add("flash");
  }

  // --- live board --------------------------------------------------------------------------------------
  function liveBoard(table) {
    var api = table.getAttribute("data-api");
    var showP = table.getAttribute("data-show-p") === "1";
    var entrantUrl = table.getAttribute("data-entrant-url");
    var body = table.tBodies[0];
    var timer = null;
    var pendingEntrants = {};

    function refresh() {
      timer = null;
      var touched = pendingEntrants;
      pendingEntrants = {};
      fetch(api, { headers: { Accept: "application/json" } })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
        .then(function (data) {
          var seen = {};
          data.rows.forEach(function (row) {
            seen[row.entrant_slug] = true;
            var tr = body.querySelector('tr[data-entrant="' + CSS.escape(row.entrant_slug) + '"]');
            var isNew = !tr;
            if (isNew) {
              tr = el("tr", { "data-entrant": row.entrant_slug });
              if (row.is_baseline) { tr.className = "is-baseline"; }
              body.appendChild(tr);
            }
            var changed = renderRow(tr, row, showP, entrantUrl);
            if (isNew || changed || touched[row.entrant_slug]) { flash(tr); }
          });
          // Banned entrants leave the board.
          Array.prototype.slice.call(body.rows).forEach(function (tr) {
            if (!seen[tr.getAttribute("data-entrant")]) { tr.parentNode.removeChild(tr); }
          });
          applySort(table);
          table.setAttribute("data-updated", String(Date.now()));
        })
        .catch(function (e) { if (window.console) { console.warn("Leaderboard refresh failed:", e); } });
      refreshPlots();
    }

    // The figures are built on the server: take the page's fresh copy and redraw the ones that changed
    // (an empty state becomes a plot the same way).
    function refreshPlots() {
      fetch(window.location.href, { headers: { Accept: "text/html" } })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          // The problems list (fastest solver per problem) comes along.
          var problems = document.getElementById("problems-section");
          var freshProblems = doc.getElementById("problems-section");
          if (problems && freshProblems && problems.innerHTML !== freshProblems.innerHTML) {
            var section = document.importNode(freshProblems, true);
            problems.parentNode.replaceChild(section, problems);
            section.querySelectorAll("table.sortable").forEach(makeSortable);
          }
          var fresh = doc.querySelectorAll("figure.plot-card");
          var current = document.querySelectorAll("figure.plot-card");
          if (fresh.length !== current.length) { return; }
          Array.prototype.forEach.call(current, function (card, i) {
            var id = (fresh[i].querySelector("script[type='application/json']") || {}).id;
            var before = id && document.getElementById(id);
            var after = fresh[i].querySelector("script[type='application/json']");
            if (before && after && before.textContent === after.textContent) { return; }
            var replacement = document.importNode(fresh[i], true);
            card.parentNode.replaceChild(replacement, card);
            drawPlots(replacement);
          });
        })
        .catch(function (e) { if (window.console) { console.warn("Plot refresh failed:", e); } });
    }

    window.KernelHub.live(table.getAttribute("data-ws"), function (event) {
      if (!event || event.type !== "leaderboard.updated") { return; }
      if (event.entrant) { pendingEntrants[event.entrant] = true; }
      // Several results can land together: one fetch for a burst.
      if (!timer) { timer = window.setTimeout(refresh, 250); }
    }, { indicator: document.getElementById("live-state") });
  }

  // --- live problem board: the page's own HTML is re-fetched and the table body swapped ------------------
  function liveProblemBoard(table) {
    var problem = table.getAttribute("data-problem");
    var timer = null;

    function refresh() {
      timer = null;
      fetch(window.location.href, { headers: { Accept: "text/html" } })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(table.id);
          if (!fresh) { return; }
          var before = {};
          Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
            before[tr.getAttribute("data-entrant")] = tr.textContent;
          });
          table.replaceChild(document.importNode(fresh.tBodies[0], true), table.tBodies[0]);
          Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
            if (before[tr.getAttribute("data-entrant")] !== tr.textContent) { flash(tr); }
          });
          applySort(table);
          table.setAttribute("data-updated", String(Date.now()));
        })
        .catch(function (e) { if (window.console) { console.warn("Problem board refresh failed:", e); } });
    }

    window.KernelHub.live(table.getAttribute("data-ws"), function (event) {
      if (!event || event.type !== "leaderboard.updated") { return; }
      if (event.problem && event.problem !== problem) { return; }
      if (!timer) { timer = window.setTimeout(refresh, 250); }
    }, { indicator: document.getElementById("live-state") });
  }

  // --- live ANE board: its numbers are all on the server-rendered page, so the page is re-fetched and the
  // results part swapped (the empty state becomes the tables the same way) --------------------------------
  function liveAneBoard(container) {
    var timer = null;

    function rowTexts(root) {
      var texts = {};
      root.querySelectorAll("[id] tr[data-entrant]").forEach(function (tr) {
        texts[tr.closest("[id]").id + "/" + tr.getAttribute("data-entrant")] = tr.textContent;
      });
      return texts;
    }

    function refresh() {
      timer = null;
      fetch(window.location.href, { headers: { Accept: "text/html" } })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(container.id);
          if (!fresh) { return; }
          var before = rowTexts(container);
          container.innerHTML = fresh.innerHTML;
          var after = rowTexts(container);
          container.querySelectorAll("[id] tr[data-entrant]").forEach(function (tr) {
            var key = tr.closest("[id]").id + "/" + tr.getAttribute("data-entrant");
            if (before[key] !== after[key]) { flash(tr); }
          });
          container.setAttribute("data-updated", String(Date.now()));
        })
        .catch(function (e) { if (window.console) { console.warn("ANE board refresh failed:", e); } });
    }

    window.KernelHub.live(container.getAttribute("data-ws"), function (event) {
      if (!event || event.type !== "leaderboard.updated") { return; }
      if (!timer) { timer = window.setTimeout(refresh, 250); }
    }, { indicator: document.getElementById("live-state") });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawPlots();
    document.querySelectorAll("table.sortable").forEach(makeSortable);
    var board = document.getElementById("board");
    if (board && board.getAttribute("data-ws") && window.KernelHub && window.KernelHub.live) { liveBoard(board); }
    var problemBoard = document.getElementById("problem-board");
    if (problemBoard && window.KernelHub && window.KernelHub.live) { liveProblemBoard(problemBoard); }
    var aneBoard = document.getElementById("ane-live");
    if (aneBoard && window.KernelHub && window.KernelHub.live) { liveAneBoard(aneBoard); }
  });
})();
