// Keyboard shortcuts of the workbench (no build step, no dependencies beyond htmx).
//   queue:   j / k move between rows, x selects the row, o or Enter opens it,
//            a label's key (shown on its button) labels the row
//   message: j / k go to the next / previous item, c writes a comment,
//            a label's key labels the message and moves on
(function () {
  "use strict";

  function typing(event) {
    var t = event.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }

  function rows() { return Array.prototype.slice.call(document.querySelectorAll("tr.item")); }

  var current = 0;

  function select(index) {
    var all = rows();
    if (!all.length) { return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) { row.classList.toggle("current", i === current); });
    all[current].scrollIntoView({ block: "nearest" });
  }

  function onQueue(event) {
    var all = rows();
    var row = all[current];
    if (event.key === "j") { select(current + 1); return true; }
    if (event.key === "k") { select(current - 1); return true; }
    if (!row) { return false; }
    if (event.key === "x") {
      var box = row.querySelector("input[type=checkbox]");
      box.checked = !box.checked;
      return true;
    }
    if (event.key === "o" || event.key === "Enter") { row.querySelector("a.open").click(); return true; }
    var button = row.querySelector('button[data-key="' + CSS.escape(event.key) + '"]');
    if (button) { button.click(); return true; }
    return false;
  }

  function onMessage(event) {
    if (event.key === "j" || event.key === "k") {
      var link = document.getElementById(event.key === "j" ? "next" : "prev");
      if (link) { link.click(); }
      return true;
    }
    if (event.key === "c") { document.getElementById("comment").focus(); return true; }
    var button = document.querySelector('#label-form button[data-key="' + CSS.escape(event.key) + '"]');
    if (button) { button.click(); return true; }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) { return; }
    var page = document.body.dataset.page;
    var handled = page === "queue" ? onQueue(event) : page === "message" ? onMessage(event) : false;
    if (handled) { event.preventDefault(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (document.body.dataset.page === "queue") { select(0); }
    var all = document.getElementById("select-all");
    if (all) {
      all.addEventListener("change", function () {
        rows().forEach(function (row) { row.querySelector("input[type=checkbox]").checked = all.checked; });
      });
    }
  });

  // a labelled row is swapped out: the cursor stays at the same place in the list
  document.addEventListener("htmx:afterSettle", function () {
    if (document.body.dataset.page === "queue") { select(current); }
  });

  // a label refused (a broker that does not answer: 503) leaves its row in place and says why
  function flash(text) {
    var shown = document.getElementById("flash");
    if (!shown) { return; }
    shown.textContent = text || "";
    shown.hidden = !text;
  }
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var page = new DOMParser().parseFromString(xhr.responseText, "text/html");
    var said = page.querySelector("p.error");
    flash(said ? said.textContent : "the server answered " + xhr.status);
  });
  document.addEventListener("htmx:sendError", function () { flash("no answer from the server"); });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) { flash(""); }
  });
})();
