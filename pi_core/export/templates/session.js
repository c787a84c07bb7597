(function () {
  "use strict";

  // The page is complete without this script: it shows the active branch. The script
  // lets you view other branches (click an entry of the tree), filter and search the
  // tree, collapse or show tool results, thinking, hidden messages and changes all at
  // once, and download the session file.

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
  var currentLeaf = state.leaf;

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
    var leafChanged = leaf !== currentLeaf;
    currentLeaf = leaf;
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
    if (leafChanged) layoutTree();  // the leaf on view is always listed
    var el = target ? document.getElementById("entry-" + target) : null;
    if (el && el.classList.contains("hidden-in-terminal")) setHidden(true);
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

  // ---------------------------------------------------------------- tree filters and search
  // The rules of _view.filter_shows, and the layout of _view.layout_tree: a listed entry
  // hangs under its nearest listed ancestor; a chain of single children stays flat, a
  // branch point indents its children.
  var filter = "default";
  var search = document.getElementById("tree-search");
  var count = document.getElementById("tree-count");
  var filterButtons = Array.prototype.slice.call(document.querySelectorAll(".tree-filters button"));

  function has(node, trait) { return node.classList.contains("is-" + trait); }

  function listed(node, words) {
    if (node.getAttribute("data-id") === currentLeaf) return true;
    if (has(node, "tool-only")) return false;
    var pass;
    if (filter === "no-tools") pass = !has(node, "settings") && !has(node, "tool-result");
    else if (filter === "user") pass = has(node, "user");
    else if (filter === "labeled") pass = has(node, "labeled");
    else if (filter === "all") pass = true;
    else pass = !has(node, "settings");
    if (!pass) return false;
    var text = node.textContent.toLowerCase();
    return words.every(function (w) { return text.indexOf(w) >= 0; });
  }

  function prefix(indent, connector, isLast, gutters, multipleRoots) {
    var displayIndent = multipleRoots ? Math.max(0, indent - 1) : indent;
    var connectorAt = connector ? displayIndent - 1 : -1;
    var out = "";
    for (var level = 0; level < displayIndent; level++) {
      if (gutters.has(level)) out += gutters.get(level) ? "│  " : "   ";
      else if (level === connectorAt) out += isLast ? "└─ " : "├─ ";
      else out += "   ";
    }
    return out;
  }

  function layoutTree() {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = new Set();
    var anchor = new Map();  // nearest listed ancestor (the nodes are in depth-first order)
    var kids = new Map([[null, []]]);
    treeNodes.forEach(function (node) {
      var id = node.getAttribute("data-id");
      var parent = parents.has(id) ? parents.get(id) : null;
      anchor.set(id, parent === null || shown.has(parent) ? parent : (anchor.get(parent) || null));
      node.hidden = !listed(node, words);
      if (node.hidden) return;
      shown.add(id);
      if (!kids.has(anchor.get(id))) kids.set(anchor.get(id), []);
      kids.get(anchor.get(id)).push(node);
    });
    var roots = kids.get(null);
    var multi = roots.length > 1;
    // [node, indent, justBranched, showConnector, isLast, gutters (level -> drawn), virtual]
    var stack = [];
    for (var i = roots.length - 1; i >= 0; i--) {
      stack.push([roots[i], multi ? 1 : 0, multi, multi, i === roots.length - 1, new Map(), multi]);
    }
    while (stack.length) {
      var item = stack.pop();
      var node = item[0], indent = item[1], justBranched = item[2], showConnector = item[3];
      var isLast = item[4], gutters = item[5], virtual = item[6];
      node.querySelector(".tree-prefix").textContent = prefix(indent, showConnector && !virtual, isLast, gutters, multi);
      var children = kids.get(node.getAttribute("data-id")) || [];
      var many = children.length > 1;
      var childIndent = many || (justBranched && indent > 0) ? indent + 1 : indent;
      var childGutters = gutters;
      if (showConnector && !virtual) {
        var displayIndent = multi ? Math.max(0, indent - 1) : indent;
        childGutters = new Map(gutters);
        childGutters.set(Math.max(0, displayIndent - 1), !isLast);
      }
      for (var j = children.length - 1; j >= 0; j--) {
        stack.push([children[j], childIndent, many, many, j === children.length - 1, childGutters, false]);
      }
    }
    count.textContent = shown.size + " / " + treeNodes.length + " entries";
  }

  filterButtons.forEach(function (button) {
    button.addEventListener("click", function () {
      filter = button.getAttribute("data-filter");
      filterButtons.forEach(function (b) { toggle(b, b === button); });
      layoutTree();
    });
  });
  search.addEventListener("input", layoutTree);

  // ---------------------------------------------------------------- toolbar
  function toggle(button, pressed) {
    button.setAttribute("aria-pressed", pressed ? "true" : "false");
  }
  function setHidden(visible) {
    document.body.classList.toggle("show-hidden", visible);
    toggle(document.querySelector('.toolbar button[data-action="hidden"]'), visible);
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
    hidden: function () {
      setHidden(!document.body.classList.contains("show-hidden"));
    },
    settings: function (button) {
      var visible = document.body.classList.toggle("hide-settings") === false;
      toggle(button, visible);
    }
  };
  document.querySelectorAll(".toolbar button[data-action]").forEach(function (button) {
    button.addEventListener("click", function () { actions[button.getAttribute("data-action")](button); });
  });
  var keys = { o: "tools", t: "thinking", h: "hidden", c: "settings" };
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") return;
    var action = keys[event.key.toLowerCase()];
    if (action) actions[action](document.querySelector('.toolbar button[data-action="' + action + '"]'));
  });

  // ---------------------------------------------------------------- the session file
  document.getElementById("download-jsonl").addEventListener("click", function () {
    var text = JSON.parse(document.getElementById("pi-session-jsonl").textContent);
    var url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    var link = document.createElement("a");
    link.href = url;
    link.download = state.download;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
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

  layoutTree();
  followHash();
  var leafNode = tree.querySelector(".tree-node.leaf");
  if (leafNode) leafNode.scrollIntoView({ block: "nearest" });
})();
