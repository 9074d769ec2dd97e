/* rooftop report: draws the figures embedded as JSON and makes tables sortable.
   Data is read from JSON script elements only; nothing is fetched. */
(function () {
  "use strict";
  function readJSON(id) {
    var el = document.getElementById(id);
    if (!el) { return null; }
    try { return JSON.parse(el.textContent); } catch (e) { console.warn("rooftop: bad JSON in " + id); return null; }
  }
  var EAGER = 3;  /* figures drawn at load; the rest when scrolled near (keeps big pages fast) */
  function drawOne(el, f) {
    if (el.getAttribute("data-drawn")) { return; }
    el.setAttribute("data-drawn", "1");
    Plotly.newPlot(el, f.data, f.layout, {
      responsive: true, displaylogo: false, showLink: false, showSendToCloud: false,
      modeBarButtonsToRemove: ["sendDataToCloud"]
    });
  }
  function drawFigures() {
    var figs = readJSON("rooftop-figures") || {};
    var status = document.getElementById("rooftop-plot-status");
    if (!Object.keys(figs).length) {
      document.body.setAttribute("data-plots-total", "0");
      document.body.setAttribute("data-draw-ms", String(Math.round(performance.now())));
      document.body.setAttribute("data-plots-ready", "0");
      return;
    }
    if (typeof Plotly === "undefined") {
      if (status) { status.textContent = "Charts unavailable: plotly.js did not load."; }
      return;
    }
    var ids = Object.keys(figs);
    var lazy = [];
    ids.forEach(function (id, n) {
      var el = document.getElementById(id);
      if (!el) { return; }
      if (n < EAGER || typeof IntersectionObserver === "undefined") { drawOne(el, figs[id]); }
      else { el.style.minHeight = ((figs[id].layout && figs[id].layout.height) || 400) + "px"; lazy.push(el); }
    });
    if (lazy.length) {
      var io = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) {
          if (e.isIntersecting) { io.unobserve(e.target); drawOne(e.target, figs[e.target.id]); }
        });
      }, {rootMargin: "600px 0px"});
      lazy.forEach(function (el) { io.observe(el); });
    }
    document.body.setAttribute("data-plots-total", String(ids.length));
    document.body.setAttribute("data-draw-ms", String(Math.round(performance.now())));
    document.body.setAttribute("data-plots-ready", String(Math.min(ids.length, EAGER)));
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
      var labelCol = heads.indexOf("label");
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
    document.querySelectorAll("td.name > div").forEach(function (d) {
      d.addEventListener("click", function () { d.classList.toggle("open"); });
    });
  }
  initTables();
  initFilters();
  drawFigures();
})();
