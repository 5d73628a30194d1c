/* portcheck report: sortable tables and row filters. Plain DOM, no libraries.
   Reads only data- attributes and text already in the page; never writes HTML. */
(function () {
  "use strict";

  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) { return ""; }
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    return raw.trim();
  }

  function compare(a, b) {
    var x = parseFloat(a.replace(/,/g, ""));
    var y = parseFloat(b.replace(/,/g, ""));
    var numeric = /^-?[\d,.]+$/;
    if (numeric.test(a) && numeric.test(b) && !isNaN(x) && !isNaN(y)) { return x - y; }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function sortBy(table, header) {
    var index = Array.prototype.indexOf.call(header.parentNode.children, header);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var order = compare(cellKey(r1, index), cellKey(r2, index));
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [];
    Array.prototype.forEach.call(headers, function (th) {
      th.setAttribute("tabindex", "0");
      th.setAttribute("title", "Sort by this column");
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(table, th); }
      });
    });
  });

  function hasToken(item, name, value) {
    var tokens = (item.getAttribute("data-" + name) || "").split(" ");
    return tokens.indexOf(value) !== -1;
  }

  function applyFilters(bar) {
    var list = document.getElementById(bar.getAttribute("data-list"));
    if (!list) { return; }
    var items = list.querySelectorAll("[data-row]");
    var target = bar.querySelector("[data-filter-target]");
    var status = bar.querySelector("[data-filter-status]");
    var text = bar.querySelector("[data-filter-text]");
    var query = text ? text.value.trim().toLowerCase() : "";
    var shown = 0;
    items.forEach(function (item) {
      var keep = true;
      bar.querySelectorAll("select[data-filter]").forEach(function (select) {
        if (select.value && !hasToken(item, select.getAttribute("data-filter"), select.value)) { keep = false; }
      });
      bar.querySelectorAll("input[data-filter-flag]").forEach(function (box) {
        if (box.checked && !hasToken(item, "flags", box.getAttribute("data-filter-flag"))) { keep = false; }
      });
      if (target && status && status.value && !hasToken(item, "status-" + target.value, status.value)) { keep = false; }
      if (query && item.textContent.toLowerCase().indexOf(query) === -1) { keep = false; }
      item.hidden = !keep;
      if (keep) { shown += 1; }
    });
    var counter = bar.querySelector(".shown");
    if (counter) {
      counter.textContent = shown === items.length ? "" : "showing " + shown + " of " + items.length;
    }
  }

  document.querySelectorAll(".filters[data-list]").forEach(function (bar) {
    bar.addEventListener("change", function () { applyFilters(bar); });
    bar.addEventListener("input", function () { applyFilters(bar); });
  });

  // ---- findings: every finding is in the page, grouped and collapsed; filter, search, regroup.
  var root = document.getElementById("finding-groups");
  if (!root) { return; }
  var bar = document.getElementById("finding-filters");
  var items = Array.prototype.slice.call(root.querySelectorAll("li.finding"));
  var hazardGroups = Array.prototype.slice.call(root.querySelectorAll("details.group"));
  items.forEach(function (item) { item.portcheckHome = item.parentNode; });
  var texts = null;  // each finding's text, lower case, made on the first search
  var excerpts = null;

  function plural(count, word) { return count + " " + word + (count === 1 ? "" : "s"); }

  function makeGroup(label, list) {
    var group = document.createElement("details");
    group.className = "group dyn";
    var summary = document.createElement("summary");
    var name = document.createElement("span");
    name.className = "path";
    name.textContent = label;
    var count = document.createElement("span");
    count.className = "group-count";
    count.setAttribute("data-findings", String(list.length));
    count.textContent = plural(list.length, "finding");
    var shown = document.createElement("span");
    shown.className = "group-shown";
    summary.appendChild(name);
    summary.appendChild(document.createTextNode(" "));
    summary.appendChild(count);
    summary.appendChild(document.createTextNode(" "));
    summary.appendChild(shown);
    group.appendChild(summary);
    var ol = document.createElement("ol");
    ol.className = "finding-list";
    list.forEach(function (item) { ol.appendChild(item); });
    group.appendChild(ol);
    return group;
  }

  function regroup(mode) {
    root.querySelectorAll("details.dyn").forEach(function (group) { group.remove(); });
    if (mode === "hazard") {
      items.forEach(function (item) { item.portcheckHome.appendChild(item); });
      hazardGroups.forEach(function (group) { group.hidden = false; });
    } else {
      var keyed = {};
      items.forEach(function (item) {
        var key = mode === "file" ? item.getAttribute("data-path")
          : (item.getAttribute("data-kernel") || "(not in a kernel)");
        (keyed[key] = keyed[key] || []).push(item);
      });
      hazardGroups.forEach(function (group) { group.hidden = true; });
      var fragment = document.createDocumentFragment();
      Object.keys(keyed).sort().forEach(function (key) {
        fragment.appendChild(makeGroup(key, keyed[key]));
      });
      root.appendChild(fragment);
    }
    applyFindingFilters();
  }

  function applyFindingFilters() {
    var selects = bar.querySelectorAll("select[data-filter]");
    var target = bar.querySelector("[data-filter-target]").value;
    var status = bar.querySelector("[data-filter-status]").value;
    var hide = Array.prototype.filter.call(bar.querySelectorAll("input[data-hide-flag]"),
      function (box) { return box.checked; }).map(function (box) { return box.getAttribute("data-hide-flag"); });
    var need = Array.prototype.filter.call(bar.querySelectorAll("input[data-need-flag]"),
      function (box) { return box.checked; }).map(function (box) { return box.getAttribute("data-need-flag"); });
    var query = document.getElementById("finding-search").value.trim().toLowerCase();
    if (query && texts === null) {
      texts = items.map(function (item) { return item.textContent.toLowerCase(); });
    }
    var wanted = [];
    selects.forEach(function (select) {
      if (select.value) { wanted.push([select.getAttribute("data-filter"), select.value]); }
    });
    var shown = 0;
    items.forEach(function (item, index) {
      var keep = true;
      for (var i = 0; keep && i < wanted.length; i += 1) {
        if (item.getAttribute("data-" + wanted[i][0]) !== wanted[i][1]) { keep = false; }
      }
      if (keep && status && item.getAttribute("data-status-" + target) !== status) { keep = false; }
      if (keep && (hide.length || need.length)) {
        var flags = (item.getAttribute("data-flags") || "").split(" ");
        hide.forEach(function (flag) { if (flags.indexOf(flag) !== -1) { keep = false; } });
        need.forEach(function (flag) { if (flags.indexOf(flag) === -1) { keep = false; } });
      }
      if (keep && query && texts[index].indexOf(query) === -1) { keep = false; }
      if (item.hidden === keep) { item.hidden = !keep; }
      if (keep) { shown += 1; }
    });
    var filtering = shown !== items.length;
    var mode = document.getElementById("group-by").value;
    root.querySelectorAll("details.group").forEach(function (group) {
      if (mode !== "hazard" && !group.classList.contains("dyn")) { return; }  // set aside
      var total = group.querySelectorAll("li.finding").length;
      var visible = total - group.querySelectorAll("li.finding[hidden]").length;
      var label = group.querySelector(".group-shown");
      if (label) { label.textContent = filtering ? "(" + visible + " shown)" : ""; }
      group.hidden = filtering && visible === 0;
    });
    document.getElementById("findings-shown").textContent =
      filtering ? "showing " + shown + " of " + items.length : plural(items.length, "finding");
  }

  function excerptLines(path, line) {
    if (excerpts === null) {
      var store = document.getElementById("excerpts");
      excerpts = store ? JSON.parse(store.textContent) : {};
    }
    var regions = excerpts[path] || [];
    for (var i = 0; i < regions.length; i += 1) {
      var first = regions[i][0];
      var lines = regions[i][1];
      if (first <= line && line < first + lines.length) {
        var out = [];
        for (var n = Math.max(first, line - 3); n <= Math.min(first + lines.length - 1, line + 3); n += 1) {
          out.push([n, lines[n - first]]);
        }
        return out;
      }
    }
    return [];
  }

  function showContext(button) {
    var item = button.closest("li.finding");
    var existing = item.querySelector("pre.snippet");
    if (existing) {
      existing.remove();
      button.textContent = "show the lines around";
      return;
    }
    var line = parseInt(item.getAttribute("data-line"), 10);
    var pre = document.createElement("pre");
    pre.className = "snippet";
    var code = document.createElement("code");
    excerptLines(item.getAttribute("data-path"), line).forEach(function (pair) {
      var row = document.createElement("span");
      row.className = pair[0] === line ? "line hit" : "line";
      var number = document.createElement("span");
      number.className = "ln";
      number.textContent = String(pair[0]);
      row.appendChild(number);
      row.appendChild(document.createTextNode(pair[1]));
      code.appendChild(row);
    });
    pre.appendChild(code);
    button.after(pre);
    button.textContent = "hide the lines around";
  }

  root.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.context");
    if (button) { showContext(button); }
  });
  bar.addEventListener("change", function (event) {
    if (event.target.id === "group-by") { regroup(event.target.value); } else { applyFindingFilters(); }
  });
  bar.addEventListener("input", function (event) {
    if (event.target.id === "finding-search") { applyFindingFilters(); }
  });
  function openAll(open) {
    root.querySelectorAll("details.group").forEach(function (group) {
      if (!group.hidden) { group.open = open; }
    });
  }
  document.getElementById("expand-all").addEventListener("click", function () { openAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { openAll(false); });

  function openTarget() {  // a link to a finding or a group opens what holds it
    var id = decodeURIComponent(location.hash.slice(1));
    var element = id && document.getElementById(id);
    if (!element) { return; }
    var group = element.closest("details.group");
    if (group) { group.open = true; }
    if (element.tagName === "DETAILS") { element.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  applyFindingFilters();
  document.documentElement.setAttribute("data-findings-ready", String(items.length));
})();
