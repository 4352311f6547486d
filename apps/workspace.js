// The coding app's workspace (apps/workspace.py): the last click's message, progress, the
// codebook, the unit and the label form (label, first recognition turn, unsure, note,
// Submit), drawn by the browser and updated in place, all in one pass, from one task to the
// next. Streamlit calls the default export with new `data` after every rerun. The form's
// inputs are redrawn only when the server's form (its identity or its values) changed, so
// what the annotator has chosen but not yet submitted stays. A submit sends the identity of
// the form it was drawn for; the server ignores one that no longer matches the form it shows.

const LABEL_KEYS = /^[1-9]$/;

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function section(root, name) {
  let node = root.querySelector(`:scope > .accord-${name}`);
  if (!node) {
    node = element("div", { class: `accord-${name}` });
    root.append(node);
  }
  return node;
}

// Each part is redrawn only when its data changed; the data last drawn is kept in a property
// of the node (not an attribute: no DOM change when nothing changed).
function update(node, value, draw) {
  const drawn = JSON.stringify(value);
  if (node.accordDrawn === drawn) return;
  node.accordDrawn = drawn;
  draw(node, value);
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

// `codebook`, `unit` and `context` are HTML the server built with every text escaped (apps/coding_app.py).
function drawHtml(node, html) {
  node.innerHTML = html;
}

function drawForm(form, spec) {
  const { id, heading, labels, turns, values } = spec;
  form.accordForm = id;
  const choices = element("div", { class: "accord-choices", role: "radiogroup", "aria-label": heading });
  labels.forEach((label, index) => {
    const option = element("button", { type: "button", role: "radio", "aria-checked": String(values.label === label), "data-label": label }, `${label} (${index + 1})`);
    option.addEventListener("click", () => choose(form, label));
    choices.append(option);
  });
  const parts = [element("p", { class: "accord-form-heading" }, heading), choices];
  if (turns !== null) {
    const select = element("select", { name: "first_turn", id: `${form.id}-first` },
      element("option", { value: "" }, "— none —"),
      ...turns.map((turn) => element("option", { value: String(turn) }, `turn ${turn}`)));
    select.value = values.first_turn === null ? "" : String(values.first_turn);
    parts.push(element("label", { class: "accord-field", for: select.id }, "First recognition turn (for a 'yes')"), select);
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

// One listener per page, acting on the form drawn last: keys 1..k choose a label and S
// submits, except while typing in a field (as Streamlit's own shortcuts do).
function listen() {
  if (window.accordWorkspace) return;
  window.accordWorkspace = { form: null };
  document.addEventListener("keydown", (event) => {
    const form = window.accordWorkspace.form;
    if (!form || !form.isConnected || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.target.closest && event.target.closest("input:not([type=checkbox]), textarea, select, [contenteditable=true], [role=listbox]")) return;
    if (LABEL_KEYS.test(event.key)) {
      const option = form.querySelectorAll("[role=radio]")[Number(event.key) - 1];
      if (!option) return;
      event.preventDefault();
      choose(form, option.dataset.label);
    } else if (event.key === "s" || event.key === "S") {
      event.preventDefault();
      form.requestSubmit();
    }
  });
}

export default function ({ data, parentElement, setTriggerValue }) {
  let root = parentElement.querySelector(":scope > .accord-workspace");
  if (!root) {
    root = element("div", { class: "accord-workspace" });
    parentElement.append(root);
  }
  update(section(root, "flash"), data.flash, drawFlash);
  update(section(root, "progress"), data.progress, drawProgress);
  update(section(root, "codebook"), data.codebook, drawCodebook);
  update(section(root, "unit"), data.unit, drawHtml);
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
  listen();
  window.accordWorkspace.form = form;
}
