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
})();
