(function () {
  "use strict";

  // The page is complete without this script: it shows the active branch. The script
  // lets you view other branches (click an entry of the tree), search the tree, and
  // collapse or show tool results, thinking and changes all at once.

  var state = JSON.parse(document.getElementById("pi-state").textContent);
  var parents = new Map();
  var children = new Map();
  // [id, parent id] in file order, so the last child of an entry is its newest
  state.entries.forEach(function (link) {
    parents.set(link[0], link[1]);
    if (link[1] !== null) {
      if (!children.has(link[1])) children.set(link[1], []);
      children.get(link[1]).push(link[0]);
    }
  });

  var tree = document.getElementById("tree");
  var treeNodes = Array.prototype.slice.call(tree.querySelectorAll(".tree-node"));
  var parts = Array.prototype.slice.call(document.querySelectorAll("#messages [data-entry-id]"));

  function pathTo(leaf) {
    var ids = new Set();
    var current = leaf;
    while (current !== null && current !== undefined && !ids.has(current)) {
      ids.add(current);
      current = parents.get(current);
    }
    return ids;
  }

  function newestLeaf(id) {
    var current = id;
    var seen = new Set();
    while (children.has(current) && !seen.has(current)) {
      seen.add(current);
      var kids = children.get(current);
      current = kids[kids.length - 1];
    }
    return current;
  }

  function show(leaf, target) {
    var path = pathTo(leaf);
    parts.forEach(function (el) {
      el.hidden = !path.has(el.getAttribute("data-entry-id"));
    });
    treeNodes.forEach(function (node) {
      var id = node.getAttribute("data-id");
      var onPath = path.has(id);
      node.classList.toggle("in-path", onPath);
      node.classList.toggle("leaf", id === leaf);
      node.classList.toggle("active", id === target);
      node.querySelector(".tree-marker").textContent = onPath ? "•" : " ";
    });
    document.querySelectorAll(".entry.target").forEach(function (el) { el.classList.remove("target"); });
    var el = target ? document.getElementById("entry-" + target) : null;
    if (el) {
      el.classList.add("target");
      el.scrollIntoView({ block: "start" });
    }
  }

  tree.addEventListener("click", function (event) {
    var node = event.target.closest(".tree-node");
    if (!node) return;
    event.preventDefault();
    var id = node.getAttribute("data-id");
    show(newestLeaf(id), id);
    if (history.replaceState) history.replaceState(null, "", "#entry-" + id);
    document.body.classList.remove("sidebar-open");
  });

  // a link to an entry of another branch (#entry-ID) opens that branch
  function followHash() {
    var match = /^#entry-(.+)$/.exec(decodeURIComponent(location.hash || ""));
    if (match && parents.has(match[1])) {
      show(newestLeaf(match[1]), match[1]);
    }
  }
  window.addEventListener("hashchange", followHash);

  // ---------------------------------------------------------------- tree search
  var search = document.getElementById("tree-search");
  var status = document.getElementById("tree-status");
  var statusText = status.innerHTML;
  search.addEventListener("input", function () {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    treeNodes.forEach(function (node) {
      var text = node.textContent.toLowerCase();
      var match = words.every(function (w) { return text.indexOf(w) >= 0; });
      node.hidden = !match;
      if (match) shown++;
    });
    tree.classList.toggle("searching", words.length > 0);
    if (words.length) status.textContent = shown + " / " + treeNodes.length + " entries";
    else status.innerHTML = statusText;
  });

  // ---------------------------------------------------------------- toolbar
  function toggle(button, pressed) {
    button.setAttribute("aria-pressed", pressed ? "true" : "false");
  }
  var actions = {
    tools: function (button) {
      var open = button.getAttribute("aria-pressed") !== "true";
      document.querySelectorAll("details.tool-result").forEach(function (d) { d.open = open; });
      toggle(button, open);
    },
    thinking: function (button) {
      var visible = document.body.classList.toggle("hide-thinking") === false;
      toggle(button, visible);
    },
    settings: function (button) {
      var visible = document.body.classList.toggle("hide-settings") === false;
      toggle(button, visible);
    }
  };
  document.querySelectorAll(".toolbar button[data-action]").forEach(function (button) {
    button.addEventListener("click", function () { actions[button.getAttribute("data-action")](button); });
  });
  var keys = { o: "tools", t: "thinking", h: "settings" };
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea") return;
    var action = keys[event.key.toLowerCase()];
    if (action) actions[action](document.querySelector('.toolbar button[data-action="' + action + '"]'));
  });

  // ---------------------------------------------------------------- narrow screens
  document.getElementById("sidebar-open").addEventListener("click", function () {
    document.body.classList.add("sidebar-open");
  });
  document.getElementById("sidebar-close").addEventListener("click", function () {
    document.body.classList.remove("sidebar-open");
  });
  document.getElementById("sidebar-backdrop").addEventListener("click", function () {
    document.body.classList.remove("sidebar-open");
  });

  followHash();
  var leafNode = tree.querySelector(".tree-node.leaf");
  if (leafNode) leafNode.scrollIntoView({ block: "nearest" });
})();
