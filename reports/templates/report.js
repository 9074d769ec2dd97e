/* rooftop report: makes tables sortable and searchable, long names expandable.
   Nothing is fetched; the charts are static SVG. */
(function () {
  "use strict";
  /* every chart is static SVG in the page; the attributes tell tests and bench/report_bench.py the
     page is ready and when */
  function markReady() {
    document.body.setAttribute("data-plots-total", "0");
    document.body.setAttribute("data-draw-ms", String(Math.round(performance.now())));
    document.body.setAttribute("data-plots-ready", "0");
  }
  function cellValue(td) {
    if (!td) { return ""; }
    var v = td.getAttribute("data-v");
    if (v !== null && v !== "") { var n = parseFloat(v); if (!isNaN(n)) { return n; } }
    return td.textContent;
  }
  function sortTable(th) {
    var table = th.closest("table");
    var tbody = table.tBodies[0];
    if (!tbody) { return; }
    var idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = !th.classList.contains("asc");
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.classList.remove("asc", "desc"); });
    th.classList.add(asc ? "asc" : "desc");
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a.cells[idx]), y = cellValue(b.cells[idx]);
      var c;
      if (typeof x === "number" && typeof y === "number") { c = x - y; }
      else if (typeof x === "number") { c = -1; }
      else if (typeof y === "number") { c = 1; }
      else { c = String(x).localeCompare(String(y)); }
      return asc ? c : -c;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    tbody.appendChild(frag);
  }
  function initTables() {
    document.querySelectorAll("table.sortable thead th").forEach(function (th) {
      th.addEventListener("click", function () { sortTable(th); });
    });
  }
  function initFilters() {
    document.querySelectorAll("div.tfilter").forEach(function (box) {
      var wrap = box.nextElementSibling;
      var table = wrap && wrap.querySelector("table");
      if (!table || !table.tBodies[0]) { return; }
      var search = box.querySelector("input.tsearch"), label = box.querySelector("select.tlabel");
      var count = box.querySelector(".tcount");
      var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) { return th.textContent; });
      var labelCol = heads.indexOf((label && label.getAttribute("data-col")) || "label");
      function apply() {
        var q = (search.value || "").toLowerCase(), lab = label.value, shown = 0, rows = table.tBodies[0].rows;
        for (var i = 0; i < rows.length; i++) {
          var r = rows[i];
          var ok = (!q || r.textContent.toLowerCase().indexOf(q) >= 0 ||
                    Array.prototype.some.call(r.querySelectorAll("[title]"), function (e) {
                      return e.getAttribute("title").toLowerCase().indexOf(q) >= 0; })) &&
                   (!lab || (labelCol >= 0 && r.cells[labelCol].textContent === lab));
          r.style.display = ok ? "" : "none";
          if (ok) { shown++; }
        }
        count.textContent = shown + " of " + rows.length + " rows";
      }
      search.addEventListener("input", apply);
      label.addEventListener("change", apply);
    });
    document.querySelectorAll("td.name > div, td.facts > div").forEach(function (d) {
      d.addEventListener("click", function () { d.classList.toggle("open"); });
    });
  }
  initTables();
  initFilters();
  markReady();
})();
