// prmc doc: the search box. Reads window.PRM_INDEX ([name, kind, href, detail] rows, written
// by search-index.js) and lists the best matches by name or number. Results are built with
// textContent, never innerHTML: names and docs come from the spec.
(function () {
  "use strict";
  var box = document.getElementById("search");
  var list = document.getElementById("results");
  var rows = window.PRM_INDEX || [];
  if (!box || !list) { return; }
  var root = box.getAttribute("data-root") || "";
  var selected = -1;

  function score(row, q) {
    var name = row[0].toLowerCase();
    var last = name.slice(name.lastIndexOf(".") + 1);
    if (name === q || last === q) { return 0; }
    if (name.indexOf(q) === 0 || last.indexOf(q) === 0) { return 1; }
    if (name.indexOf(q) >= 0) { return 2; }
    if ((" " + row[3].toLowerCase() + " ").indexOf(" " + q + " ") >= 0) { return 3; }
    if (row[3].toLowerCase().indexOf(q) >= 0) { return 4; }
    return -1;
  }

  function search(q) {
    q = q.trim().toLowerCase();
    var hits = [];
    if (q.length === 0) { return hits; }
    for (var i = 0; i < rows.length; i++) {
      var s = score(rows[i], q);
      if (s >= 0) { hits.push([s, rows[i][0].length, i]); }
    }
    hits.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]; });
    return hits.slice(0, 60).map(function (h) { return rows[h[2]]; });
  }

  function show() {
    var hits = search(box.value);
    list.textContent = "";
    selected = -1;
    hits.forEach(function (row) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = root + row[2];
      a.textContent = row[0];
      var note = document.createElement("small");
      note.textContent = row[1] + (row[3] ? " · " + row[3] : "");
      li.appendChild(a);
      li.appendChild(note);
      list.appendChild(li);
    });
    list.hidden = hits.length === 0;
  }

  function move(step) {
    var items = list.children;
    if (items.length === 0) { return; }
    if (selected >= 0) { items[selected].className = ""; }
    selected = (selected + step + items.length) % items.length;
    items[selected].className = "sel";
    items[selected].scrollIntoView({ block: "nearest" });
  }

  box.addEventListener("input", show);
  box.addEventListener("keydown", function (e) {
    if (e.key === "ArrowDown") { move(1); e.preventDefault(); }
    else if (e.key === "ArrowUp") { move(-1); e.preventDefault(); }
    else if (e.key === "Enter") {
      var items = list.children;
      var pick = items[selected >= 0 ? selected : 0];
      if (pick) { window.location.href = pick.firstChild.href; }
    } else if (e.key === "Escape") { list.hidden = true; }
  });
  document.addEventListener("click", function (e) {
    if (e.target !== box && !list.contains(e.target)) { list.hidden = true; }
  });
}());
