// The coding app's workspace (apps/workspace.py): the last click's message, progress, the
// find bar and the way to the focus turn (a sticky head), the codebook, the turn index beside
// the unit, and the label form (label, first recognition turn, unsure, note, Submit), drawn by
// the browser and updated in place, all in one pass, from one task to the next. Streamlit
// calls the default export with new `data` after every rerun. The form's inputs are redrawn
// only when the server's form (its identity or its values) changed, so what the annotator has
// chosen but not yet submitted stays. A submit sends the identity of the form it was drawn
// for; the server ignores one that no longer matches the form it shows.
//
// Reading a long unit: a new unit opens at its top with the keyboard focus on it; the focus
// turn (identify_turn) is one key (F) or click away; the index jumps to any turn; long blocks
// arrive folded (<details>) from the server; find (/) marks every match in the unit, opens
// the folds holding them and steps through them with Enter / Shift+Enter (a new unit starts
// with an empty find); Escape returns to the unit. Any navigation gives the keyboard focus back to the unit, so 1..k and S act at once.

const LABEL_KEYS = /^[1-9]$/;
const MAX_HITS = 2000;

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function section(parent, name, tag = "div") {
  let node = parent.querySelector(`:scope > .accord-${name}`);
  if (!node) {
    node = element(tag, { class: `accord-${name}` });
    parent.append(node);
  }
  return node;
}

// Each part is redrawn only when its data changed; the data last drawn is kept in a property
// of the node (not an attribute: no DOM change when nothing changed). True when redrawn.
function update(node, value, draw) {
  const drawn = JSON.stringify(value);
  if (node.accordDrawn === drawn) return false;
  node.accordDrawn = drawn;
  draw(node, value);
  return true;
}

function drawFlash(node, flash) {
  node.replaceChildren();
  node.className = "accord-flash";
  if (!flash) return;
  node.classList.add(`accord-flash-${flash.kind}`);
  node.setAttribute("role", flash.kind === "error" ? "alert" : "status");
  node.append(...flash.messages.map((message) => element("p", {}, message)));
}

function drawProgress(node, progress) {
  const bar = element("div", { class: "accord-bar", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": String(Math.round(progress.fraction * 100)) });
  bar.append(element("div", { style: `width: ${(progress.fraction * 100).toFixed(2)}%` }));
  node.replaceChildren(element("p", {}, element("strong", {}, progress.heading), ` · ${progress.detail}`), bar);
}

// The codebook in a <details> the browser opens and closes by itself (no rerun); it keeps
// its state from one task to the next, only its content is replaced.
function drawCodebook(node, html) {
  let details = node.querySelector(":scope > details");
  if (!details) {
    details = element("details", {}, element("summary", {}, "Show the codebook (how to label this unit)"), element("div", { class: "accord-codebook-text" }));
    node.append(details);
  }
  details.querySelector(".accord-codebook-text").innerHTML = html;
}

// `codebook`, `index`, `unit` and `context` are HTML the server built with every text escaped (apps/workspace.py).
function drawHtml(node, html) {
  node.innerHTML = html;
}

function drawForm(form, spec) {
  const { id, heading, question, labels, turns, values } = spec;
  form.accordForm = id;
  const choices = element("div", { class: "accord-choices", role: "radiogroup", "aria-label": heading });
  labels.forEach((label, index) => {
    const option = element("button", { type: "button", role: "radio", "aria-checked": String(values.label === label), "data-label": label }, `${label} (${index + 1})`);
    option.addEventListener("click", () => choose(form, label));
    choices.append(option);
  });
  // The question sits right above the choices: the codebook (folded above the unit) defines the labels.
  const parts = [element("p", { class: "accord-form-heading" }, heading),
    element("p", { class: "accord-question" }, question), choices];
  if (turns !== null) {
    const select = element("select", { name: "first_turn", id: `${form.id}-first` },
      element("option", { value: "" }, "— none —"),
      ...turns.map((turn) => element("option", { value: String(turn) }, `turn ${turn}`)));
    select.value = values.first_turn === null ? "" : String(values.first_turn);
    parts.push(element("label", { class: "accord-field", for: select.id }, "First recognition turn (needed for a 'yes')"), select);
  }
  const unsure = element("input", { type: "checkbox", name: "unsure", id: `${form.id}-unsure` });
  unsure.checked = values.unsure;
  const note = element("textarea", { name: "note", id: `${form.id}-note`, rows: "3" });
  note.value = values.note;
  parts.push(
    element("div", { class: "accord-check" }, unsure, element("label", { for: unsure.id }, "Unsure (a flag only; it does not change the label)")),
    element("label", { class: "accord-field", for: note.id }, "Note"), note,
    element("button", { type: "submit", class: "accord-submit", title: "Submit (S)" }, "Submit"),
  );
  form.replaceChildren(...parts);
}

function choose(form, label) {
  for (const option of form.querySelectorAll("[role=radio]")) option.setAttribute("aria-checked", String(option.dataset.label === label));
}

function collect(form) {
  const checked = form.querySelector('[role=radio][aria-checked="true"]');
  const select = form.querySelector("select[name=first_turn]");
  return {
    form: form.accordForm,
    label: checked ? checked.dataset.label : null,
    first_turn: select && select.value !== "" ? Number(select.value) : null,
    unsure: form.querySelector("input[name=unsure]").checked,
    note: form.querySelector("textarea[name=note]").value,
  };
}

// Scroll the unit's own pane (never the page) so that `node` sits `where` of the pane
// ("start": its top at the pane's top, "center": in the middle).
function scrollPane(pane, node, where) {
  const offset = node.getBoundingClientRect().top - pane.getBoundingClientRect().top;
  pane.scrollTop += where === "center" ? offset - pane.clientHeight / 2 + node.offsetHeight / 2 : offset;
}

function goToTurn(view, number) {
  const turn = view.pane.querySelector(`.accord-turn[data-turn="${number}"]`);
  if (!turn) return;
  scrollPane(view.pane, turn, "start");
  turn.focus({ preventScroll: true });
  for (const entry of view.index.querySelectorAll("button[data-turn]")) entry.classList.toggle("accord-index-current", entry.dataset.turn === String(number));
}

function focusUnit(view) {
  view.pane.focus({ preventScroll: true });
}

// -- find in the unit ------------------------------------------------------------------

function clearHits(view) {
  for (const mark of view.find.hits) {
    const parent = mark.parentNode;
    if (!parent) continue;
    parent.replaceChild(document.createTextNode(mark.textContent), mark);
    parent.normalize();
  }
  view.find.hits = [];
  view.find.current = -1;
}

function search(view) {
  clearHits(view);
  const query = view.find.input.value;
  view.find.searched = query;
  if (query.trim() !== "") {
    const pattern = new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
    // A folded block's preview repeats its first line: only the block itself counts.
    const walker = document.createTreeWalker(view.pane, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (node.parentElement.closest("summary") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const found = [];
    for (let node = walker.nextNode(); node && found.length < MAX_HITS; node = walker.nextNode()) {
      for (const match of node.data.matchAll(pattern)) {
        found.push([node, match.index, match[0].length]);
        if (found.length >= MAX_HITS) break;
      }
    }
    // Wrapped from the last match back, so the offsets of earlier matches in a node stay valid.
    const hits = [];
    for (let i = found.length - 1; i >= 0; i -= 1) {
      const [node, start, length] = found[i];
      const rest = node.splitText(start);
      rest.splitText(length);
      const mark = element("mark", { class: "accord-hit" }, rest.data);
      rest.replaceWith(mark);
      hits.push(mark);
    }
    view.find.hits = hits.reverse();
  }
  step(view, 0);
}

function step(view, by) {
  const { hits } = view.find;
  if (view.find.current >= 0 && hits[view.find.current]) hits[view.find.current].classList.remove("accord-hit-current");
  if (!hits.length) {
    view.find.count.textContent = view.find.input.value.trim() === "" ? "" : "no match";
    return;
  }
  view.find.current = ((view.find.current < 0 ? 0 : view.find.current + by) + hits.length) % hits.length;
  const hit = hits[view.find.current];
  hit.classList.add("accord-hit-current");
  for (let fold = hit.closest("details"); fold; fold = fold.parentElement.closest("details")) fold.open = true;
  scrollPane(view.pane, hit, "center");
  view.find.count.textContent = `${view.find.current + 1} of ${hits.length}${hits.length >= MAX_HITS ? "+" : ""}`;
}

function drawFind(head, view) {
  const input = element("input", { type: "search", class: "accord-find-input", placeholder: "Find in this unit (/)", "aria-label": "Find in this unit" });
  const count = element("span", { class: "accord-find-count", "aria-live": "polite" });
  const previous = element("button", { type: "button", title: "Previous match (Shift+Enter)" }, "▲");
  const next = element("button", { type: "button", title: "Next match (Enter)" }, "▼");
  const toFocus = element("button", { type: "button", class: "accord-go-focus", title: "Go to the turn you are labelling (F)" });
  const bar = element("div", { class: "accord-tools" }, element("div", { class: "accord-find", role: "search" }, input, count, previous, next), toFocus);
  head.append(bar);
  view.find = { input, count, hits: [], current: -1, timer: null, searched: "" };
  view.toFocus = toFocus;
  input.addEventListener("input", () => {
    clearTimeout(view.find.timer);
    view.find.timer = setTimeout(() => search(view), 150);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      clearTimeout(view.find.timer);
      if (view.find.searched !== input.value) search(view);
      else step(view, event.shiftKey ? -1 : 1);
    } else if (event.key === "Escape") {
      event.preventDefault();
      focusUnit(view);
    }
  });
  previous.addEventListener("click", () => step(view, -1));
  next.addEventListener("click", () => step(view, 1));
  toFocus.addEventListener("click", () => goToTurn(view, view.focusTurn));
}

// -- keys --------------------------------------------------------------------------------

// One listener per page, acting on the workspace drawn last: keys 1..k choose a label, S
// submits, F goes to the focus turn and / to the find bar, except while typing in a field
// (as Streamlit's own shortcuts do).
function listen() {
  if (window.accordWorkspace) return;
  window.accordWorkspace = { view: null };
  document.addEventListener("keydown", (event) => {
    const view = window.accordWorkspace.view;
    if (!view || !view.form.isConnected || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.target.closest && event.target.closest("input:not([type=checkbox]), textarea, select, [contenteditable=true], [role=listbox]")) return;
    const { form } = view;
    if (LABEL_KEYS.test(event.key)) {
      const option = form.querySelectorAll("[role=radio]")[Number(event.key) - 1];
      if (!option) return;
      event.preventDefault();
      choose(form, option.dataset.label);
    } else if (event.key === "s" || event.key === "S") {
      event.preventDefault();
      form.requestSubmit();
    } else if ((event.key === "f" || event.key === "F") && view.focusTurn !== null) {
      event.preventDefault();
      goToTurn(view, view.focusTurn);
    } else if (event.key === "/") {
      event.preventDefault();
      view.find.input.focus();
      view.find.input.select();
    }
  });
}

// Below this width the sidebar (navigation, shortcuts) would squeeze the unit: it starts folded,
// one click on Streamlit's arrow away, and its keys (N, P) work folded too.
const NARROW_PX = 1000;

function foldSidebarWhenNarrow(tries = 20) {
  if (window.accordWorkspace.sidebarChecked || window.innerWidth >= NARROW_PX) return;
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  if (sidebar && sidebar.dataset.collapsed === "true") {
    window.accordWorkspace.sidebarChecked = true;  // folded already (by the person, or by Streamlit)
    return;
  }
  const fold = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
  if (sidebar && fold && sidebar.getBoundingClientRect().width > 0) {
    window.accordWorkspace.sidebarChecked = true;  // once per page: a person who opens it again keeps it open
    fold.click();
  } else if (tries > 0) {
    setTimeout(() => foldSidebarWhenNarrow(tries - 1), 150);  // the sidebar is still being drawn
  }
}

export default function ({ data, parentElement, setTriggerValue }) {
  let root = parentElement.querySelector(":scope > .accord-workspace");
  const first = !root;
  if (first) {
    root = element("div", { class: "accord-workspace" });
    parentElement.append(root);
  }
  const head = section(root, "head");
  const view = root.accordView || (root.accordView = {});
  update(section(head, "flash"), data.flash, drawFlash);
  update(section(head, "progress"), data.progress, drawProgress);
  if (!view.find) drawFind(head, view);
  update(section(root, "codebook"), data.codebook, drawCodebook);
  const reader = section(root, "reader");
  view.index = section(reader, "index", "nav");
  view.pane = section(reader, "pane");
  view.pane.tabIndex = 0;
  view.pane.setAttribute("aria-label", "The unit");
  update(view.index, data.index, drawHtml);
  view.index.hidden = data.index === "";
  if (!view.index.accordListening) {
    view.index.accordListening = true;
    view.index.addEventListener("click", (event) => {
      const entry = event.target.closest("button[data-turn]");
      if (entry) goToTurn(view, Number(entry.dataset.turn));
    });
  }
  view.focusTurn = data.focus;
  view.toFocus.hidden = data.focus === null;
  view.toFocus.textContent = data.focus === null ? "" : `Go to turn ${data.focus}, the turn you are labelling (F)`;
  const newUnit = update(view.pane, data.unit, (node, html) => {
    view.find.hits = [];
    view.find.current = -1;
    drawHtml(node, html);
  });
  if (newUnit) {
    // Every new task opens at its top: the unit's pane, and the page if it was scrolled past
    // the workspace; the index shows the focus turn's entry.
    view.pane.scrollTop = 0;
    const marked = view.index.querySelector(".accord-index-focus");
    view.index.scrollTop = 0;
    if (marked) scrollPane(view.index, marked, "center");
    if (root.getBoundingClientRect().top < 0) root.scrollIntoView({ block: "start" });
    view.find.input.value = "";
    view.find.searched = "";
    view.find.count.textContent = "";
  }
  update(section(root, "context"), data.context, drawHtml);
  let form = root.querySelector(":scope > form");
  if (!form) {
    form = element("form", { class: "accord-label-form", id: `accord-form-${Math.random().toString(36).slice(2)}` });
    root.append(form);
  }
  update(form, data.form, drawForm);
  form.onsubmit = (event) => {
    event.preventDefault();
    setTriggerValue("submit", collect(form));
  };
  view.form = form;
  // The keyboard focus goes back to the unit on a new unit and after any navigation (the
  // server counts those), wherever it was: the go-to box, a sidebar button, a removed form.
  if (first || newUnit || view.navigation !== data.navigation) focusUnit(view);
  view.navigation = data.navigation;
  listen();
  window.accordWorkspace.view = view;
  foldSidebarWhenNarrow();
}
