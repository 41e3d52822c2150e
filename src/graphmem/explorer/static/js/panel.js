// The side panel: one entity's type, project, aliases, facts and their history, its timeline of
// changes, its relations, and the forms that correct them. Edit controls are only built when the
// token can write.

import { get } from "./api.js";
import { el, field, shortTime } from "./dom.js";
import { typeColour } from "./graph.js";

function typeChip(type) {
  const dot = el("span", { class: "swatch", "aria-hidden": "true" });
  dot.style.backgroundColor = typeColour(type);
  return el("span", { class: "type-chip" }, dot, type);
}

// A fact's text, each `[redacted: GitHub token]` marker (a secret graphmem never kept) shown as such.
function factText(text) {
  const pieces = text.split(/(\[redacted: [^\]]+\])/);
  return el(
    "p",
    { class: "fact-text" },
    pieces.map((piece, index) => (index % 2 ? el("mark", { class: "redacted", title: "A secret graphmem did not keep" }, piece) : piece)),
  );
}

function factMeta(fact) {
  const parts = [];
  if (fact.status) parts.push(fact.status);
  if (fact.author) parts.push("by " + fact.author);
  if (fact.createdAt) parts.push(shortTime(fact.createdAt));
  return el("p", { class: "meta" }, parts.join(" · "));
}

/** A one-field form: label, input, submit; `submit(value)` returns a promise. */
function smallForm({ label, button, multiline = false, value = "", submit, extra = [] }) {
  const input = multiline ? el("textarea", { rows: 2, required: true }) : el("input", { type: "text", required: true });
  input.value = value;
  const form = el("form", { class: "small-form" }, field(label, input), ...extra, el("button", { type: "submit" }, button));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    await submit(text, form);
  });
  return form;
}

/** The form that moves an entity to another of `projects` (each `{name, key}`); null when there is none. */
function moveForm(entity, projects, actions) {
  const others = projects.filter((project) => project.key !== entity.projectKey);
  if (!others.length) return null;
  const names = others.map((project) => project.name);
  const select = el(
    "select",
    { required: true },
    others.map((project) => {
      if (project.key === "") return el("option", { value: "shared" }, "shared space (every project sees it)");
      // Two projects may share a short name: those show their whole key.
      return el("option", { value: project.key }, names.filter((name) => name === project.name).length > 1 ? project.key : project.name);
    }),
  );
  const form = el("form", { class: "small-form" }, field("Move to project", select), el("button", { type: "submit" }, "Move"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await actions.edit("entities/move", { name: entity.name, to: select.value });
  });
  return el("details", { class: "danger-zone" }, el("summary", {}, "Move to another project"), form);
}

/**
 * Fill the panel with `entity` (as GET /api/entity answers). `neighbours` is the first page of
 * /api/neighbours (its relations are listed), `actions` the app's callbacks, `projects` the
 * projects it may move to (null when the memory holds none: then the panel says nothing of them).
 */
export function renderEntity(body, entity, neighbours, canWrite, actions, projects = null) {
  const name = entity.name;
  const children = [];

  children.push(el("p", { class: "entity-type" }, typeChip(entity.type), ` · ${entity.degree} relation${entity.degree === 1 ? "" : "s"}`));
  if (projects !== null) {
    const where = entity.projectKey === "" ? "shared space (every project sees it)" : entity.project;
    children.push(el("p", { class: "entity-project" }, "Project: ", el("strong", {}, where)));
  }
  if (entity.aliases.length) children.push(el("p", { class: "aliases" }, "Also known as: " + entity.aliases.join(", ")));
  const made = [];
  if (entity.createdAt) made.push(`created ${shortTime(entity.createdAt)}${entity.createdBy ? " by " + entity.createdBy : ""}`);
  if (entity.updatedAt) made.push(`updated ${shortTime(entity.updatedAt)}${entity.updatedBy ? " by " + entity.updatedBy : ""}`);
  if (made.length) children.push(el("p", { class: "meta" }, made.join(" · ")));

  children.push(
    el(
      "div",
      { class: "button-row" },
      el("button", { type: "button", onclick: () => actions.expand(name) }, "Expand neighbours"),
      el("button", { type: "button", onclick: () => actions.pathFrom(name) }, "Path from here"),
      el("button", { type: "button", onclick: () => actions.pathTo(name) }, "Path to here"),
    ),
  );

  // Current facts, each with its editing controls.
  const facts = el("ul", { class: "facts", "aria-label": "Current facts" });
  for (const fact of entity.facts) {
    const item = el("li", { class: "fact" }, factText(fact.text), factMeta(fact));
    if (canWrite) {
      const edit = el("button", { type: "button", class: "link-button" }, "Edit");
      const remove = el("button", { type: "button", class: "link-button danger" }, "Delete");
      edit.setAttribute("aria-label", "Edit the fact: " + fact.text.slice(0, 60));
      remove.setAttribute("aria-label", "Delete the fact: " + fact.text.slice(0, 60));
      edit.addEventListener("click", () => {
        const form = smallForm({
          label: "New text for this fact",
          button: "Save",
          multiline: true,
          value: fact.text,
          submit: (text) => actions.edit("facts/edit", { name, id: fact.id, text }),
        });
        form.append(el("button", { type: "button", class: "link-button", onclick: () => form.replaceWith(controls) }, "Cancel"));
        controls.replaceWith(form);
        form.querySelector("textarea").focus();
      });
      // A deleted fact has no history to come back from: ask first.
      remove.addEventListener("click", () => {
        if (window.confirm(`Delete this fact of ${name}?\n\n${fact.text}`)) actions.edit("facts/delete", { name, texts: [fact.text] });
      });
      const controls = el("div", { class: "fact-controls" }, edit, remove);
      item.append(controls);
    }
    facts.append(item);
  }
  const factsTotal = entity.factsTotal ?? entity.facts.length;
  children.push(el("h3", {}, `Facts (${factsTotal.toLocaleString("en")})`));
  children.push(entity.facts.length ? facts : el("p", { class: "meta" }, "No facts yet."));
  if (factsTotal > entity.facts.length) {
    // The server sends the first facts of an entity with very many; an agent's get_entity pages through all.
    children.push(el("p", { class: "meta" }, `Showing the first ${entity.facts.length} of ${factsTotal.toLocaleString("en")} facts.`));
  }
  if (canWrite) {
    children.push(
      smallForm({ label: "Add a fact", button: "Add fact", multiline: true, submit: (text) => actions.edit("facts/add", { name, texts: [text] }) }),
    );
  }

  if (entity.history.length) {
    const history = el("ul", { class: "facts history", "aria-label": "Earlier versions" });
    for (const fact of entity.history) {
      const note = fact.supersededBy ? "superseded" : fact.status || "archived";
      history.append(el("li", { class: "fact old" }, factText(fact.text), el("p", { class: "meta" }, [note, fact.author ? "by " + fact.author : "", shortTime(fact.createdAt)].filter(Boolean).join(" · "))));
    }
    const historyTotal = entity.historyTotal ?? entity.history.length;
    const shownNote = historyTotal > entity.history.length ? `, the newest ${entity.history.length} shown` : "";
    children.push(el("details", { class: "history-block" }, el("summary", {}, `History (${historyTotal} earlier version${historyTotal === 1 ? "" : "s"}${shownNote})`), history));
  }

  children.push(timeline(name, canWrite, actions));

  // Relations: the first page of neighbours, each a link to open it.
  children.push(el("h3", {}, `Relations (${entity.relations.outgoing} out, ${entity.relations.incoming} in)`));
  const relations = el("ul", { class: "relations", "aria-label": "Relations" });
  for (const relation of neighbours ? neighbours.relations : []) {
    const outgoing = relation.from === name;
    const other = outgoing ? relation.to : relation.from;
    const item = el(
      "li",
      {},
      el("span", { class: "relation-type" }, outgoing ? `${relation.relationType} →` : `← ${relation.relationType}`),
      " ",
      el("button", { type: "button", class: "link-button", onclick: () => actions.open(other) }, other),
    );
    if (canWrite) {
      const remove = el("button", { type: "button", class: "link-button danger" }, "Delete");
      remove.setAttribute("aria-label", `Delete the relation ${relation.from} ${relation.relationType} ${relation.to}`);
      remove.addEventListener("click", () => {
        if (window.confirm(`Delete the relation ${relation.from} ${relation.relationType} ${relation.to}?`)) actions.edit("relations/delete", relation);
      });
      item.append(" ", remove);
    }
    relations.append(item);
  }
  if (neighbours) {
    const rest = neighbours.total - neighbours.offset - neighbours.neighbours.length;
    if (rest > 0) relations.append(el("li", { class: "meta" }, `and ${rest.toLocaleString("en")} more neighbours (expand to page through them)`));
  }
  children.push(relations);

  if (canWrite) {
    const other = el("input", { type: "text", required: true });
    children.push(
      smallForm({
        label: "Relation type",
        button: "Add relation",
        extra: [field("To (entity name)", other)],
        submit: (relationType) => actions.edit("relations/add", { from: name, to: other.value.trim(), relationType }),
      }),
    );
    children.push(
      el(
        "details",
        { class: "danger-zone" },
        el("summary", {}, "Rename or merge"),
        smallForm({ label: "New name", button: "Rename", value: name, submit: (newName) => actions.edit("entities/rename", { name, newName }) }),
        smallForm({ label: "Merge into (entity name)", button: "Merge", submit: (target) => actions.edit("entities/merge", { source: name, target }) }),
      ),
    );
    if (projects !== null) children.push(moveForm(entity, projects, actions));
  }
  body.replaceChildren(...children);
}

/**
 * The entity's timeline: the changes that named it, newest first, read from the change log when
 * the block is opened, and a page further on each "Older changes".
 */
function timeline(name, canWrite, actions) {
  const list = el("ol", { class: "timeline", "aria-label": "Changes" });
  const block = el("details", { class: "timeline-block" }, el("summary", {}, "Timeline"), list);
  async function load(before) {
    let page;
    try {
      page = await get("changes", { name, before });
    } catch (error) {
      list.append(el("li", { class: "meta" }, `The changes could not be read: ${error.message}`));
      return;
    }
    if (!page.changes.length && before === undefined) list.append(el("li", { class: "meta" }, "No change recorded."));
    for (const change of page.changes) {
      const meta = [`change ${change.seq}`, shortTime(change.at), "by " + change.by, "via " + change.via].join(" · ");
      const item = el("li", { class: "change" }, el("p", { class: "meta" }, meta), ...change.did.map((line) => el("p", { class: "change-did" }, line)));
      if (canWrite) {
        const undo = el("button", { type: "button", class: "link-button danger" }, "Undo");
        undo.setAttribute("aria-label", `Undo change ${change.seq}`);
        undo.addEventListener("click", () => {
          if (window.confirm(`Undo change ${change.seq} (${change.via})? It is taken back by a new change.`)) actions.edit("changes/undo", { name, seq: change.seq });
        });
        item.append(undo);
      }
      list.append(item);
    }
    if (page.before !== undefined) {
      const more = el("button", { type: "button", class: "link-button" }, "Older changes");
      more.addEventListener("click", () => {
        more.parentElement.remove();
        load(page.before);
      });
      list.append(el("li", {}, more));
    }
  }
  block.addEventListener("toggle", () => {
    if (block.open && !list.childElementCount) load(undefined);
  });
  return block;
}

/** The path found between two entities, in order, each one a link. */
export function renderPath(body, result, from, to, actions) {
  if (!result.found) {
    body.replaceChildren(el("p", {}, `No path of up to 6 hops joins ${from} and ${to}.`));
    return;
  }
  const steps = el("ol", { class: "path-steps", "aria-label": "Path" });
  result.entities.forEach((card, index) => {
    const item = el("li", {}, typeChip(card.type), " ", el("button", { type: "button", class: "link-button", onclick: () => actions.open(card.name) }, card.name));
    const relation = result.relations[index];
    if (relation) item.append(el("span", { class: "meta" }, ` ${relation.from === card.name ? relation.relationType + " →" : "← " + relation.relationType}`));
    steps.append(item);
  });
  body.replaceChildren(el("p", {}, `${result.entities.length - 1} hop${result.entities.length === 2 ? "" : "s"}:`), steps);
}

/** Entities that probably name one thing, best reason first, each pair with Merge (the newer into the older). */
export function renderDuplicates(body, page, canWrite, actions) {
  if (!page.pairs.length) {
    body.replaceChildren(el("p", {}, "No two entities look like one thing under two names."));
    return;
  }
  const list = el("ul", { class: "duplicates", "aria-label": "Probable duplicates" });
  for (const pair of page.pairs) {
    const item = el(
      "li",
      { class: "duplicate" },
      el("button", { type: "button", class: "link-button", onclick: () => actions.open(pair.name) }, pair.name),
      " may be ",
      el("button", { type: "button", class: "link-button", onclick: () => actions.open(pair.existing) }, pair.existing),
      el("p", { class: "meta" }, `${pair.type} · ${pair.why}`),
    );
    if (canWrite) {
      const merge = el("button", { type: "button" }, "Merge");
      merge.setAttribute("aria-label", `Merge ${pair.name} into ${pair.existing}`);
      merge.addEventListener("click", () => {
        const question = `Merge ${pair.name} into ${pair.existing}? Its facts and relations move over and its name becomes an alias.`;
        if (window.confirm(question)) actions.edit("entities/merge", { source: pair.name, target: pair.existing });
      });
      item.append(merge);
    }
    list.append(item);
  }
  const shown = page.offset + page.pairs.length;
  const more = page.total > shown ? el("p", { class: "meta" }, `Showing ${shown} of ${page.total.toLocaleString("en")} pairs; merge some to see the rest.`) : null;
  body.replaceChildren(el("p", {}, `${page.total.toLocaleString("en")} pair${page.total === 1 ? "" : "s"}, the surest first:`), list, more);
}

/** The form that adds an entity. */
export function renderNewEntity(body, actions) {
  const name = el("input", { type: "text", required: true });
  const type = el("input", { type: "text", required: true, placeholder: "person" });
  const fact = el("textarea", { rows: 2 });
  const form = el("form", { class: "small-form" }, field("Name", name), field("Entity type", type), field("First fact (optional)", fact), el("button", { type: "submit" }, "Add entity"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const texts = fact.value.trim() ? [fact.value.trim()] : [];
    await actions.edit("entities/add", { name: name.value.trim(), type: type.value.trim(), texts });
  });
  body.replaceChildren(form);
  name.focus();
}
