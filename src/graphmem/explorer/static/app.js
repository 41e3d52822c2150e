// The explorer page: wires the search box, the graph, the legend and the side panel to the
// server's /api/ routes. Everything it draws comes in bounded pages: the overview first, then
// what the user asks for (a type's entities, an entity's neighbours, a path).

import {
  ApiError,
  declineOfferedToken,
  get,
  hasToken,
  offeredToken,
  post,
  setToken,
  signedInByLink,
  takeTokenFromAddress,
  useProject,
} from "./js/api.js";
import { el } from "./js/dom.js";
import { Graph, MAX_NODES, knownTypes, separateLabels, typeColour } from "./js/graph.js";
import { renderDuplicates, renderEntity, renderNewEntity, renderPath } from "./js/panel.js";
import { Search } from "./js/search.js";
import { emptyState, parseState, shareLink, writeState } from "./js/state.js";
import { timed } from "./js/timing.js";

performance.mark("graphmem: script started");

const $ = (id) => document.getElementById(id);
const PAGE = 25;
/**
 * The overview draws the commonest types as clusters, no more: 30 clusters and their hubs only
 * fit on a screen at a zoom too small to read. The others stay in the legend; a click draws one.
 */
const PHONE = window.matchMedia("(max-width: 700px)");
const OVERVIEW_CLUSTERS = PHONE.matches ? 6 : 12;
/** The most connected entities drawn per cluster in the overview (the overview answers up to 40). */
const OVERVIEW_HUBS_PER_TYPE = PHONE.matches ? 2 : 4;

const explorer = {
  busy: 0, // requests and layouts in flight: tests wait for 0
  ready: false,
  session: null,
  overview: null,
  state: parseState(takeTokenFromAddress()),
  graph: null,
  get cy() {
    return this.graph.cy;
  },
  shareLink: () => shareLink(explorer.state),
  actions: null, // the panel's actions, for tests that drive what the page itself would do
};
window.graphmemExplorer = explorer;
useProject(explorer.state.project);

// <body data-explorer="loading|busy|idle">: tests (and anyone curious) wait on it without eval,
// which the page's Content-Security-Policy forbids.
function showActivity() {
  document.body.dataset.explorer = explorer.busy > 0 ? "busy" : explorer.ready ? "idle" : "loading";
}

async function tracked(work) {
  explorer.busy += 1;
  showActivity();
  try {
    return await work();
  } finally {
    explorer.busy -= 1;
    showActivity();
  }
}

function say(text, { error = false } = {}) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", error);
}

function report(error) {
  if (error instanceof ApiError && error.status === 403) {
    // The server's own words say what was refused and what to ask for.
    say(error.message, { error: true });
  } else if (error instanceof ApiError && error.status === 401) {
    askForToken("The token was refused: enter it again.");
  } else {
    say(error.message || String(error), { error: true });
  }
}

function saveState() {
  writeState(explorer.state);
}

// ---- the token form -------------------------------------------------------------------

function askForToken(message = "") {
  $("login").hidden = false;
  $("login-error").textContent = message;
  $("login-token").focus();
}

/** Who the page is signed in as, in the top bar: the token's name, as edits record it. */
function showWho(session) {
  const access = session.canWrite ? "" : " (read only)";
  let text = "";
  if (session.who) text = `Signed in as ${session.who}${access}`;
  else if (hasToken()) text = `Signed in with the server's token${access}`;
  $("signed-in").textContent = text;
  if (signedInByLink() && session.who) {
    // A new tab holds no token, so a link's is adopted: anyone can make such a link, so the page
    // says at once whose name its edits will carry.
    say(`Signed in by the link you opened, as ${session.who}${access}: edits are recorded under that name. If it is not yours, close this tab and open your own link (graphmem view).`);
  }
}

/** A link carried a token other than the tab's: say whose it is, and let the user choose. */
async function offerLinkToken() {
  const token = offeredToken();
  if (token === null) return;
  let whose = "another token";
  try {
    const theirs = await get("session", {}, token);
    whose = theirs.who ? `the token of ${theirs.who}${theirs.canWrite ? "" : " (read only)"}` : "the server's token";
  } catch {
    whose = "a token this server refuses";
  }
  const mine = explorer.session.who ? `as ${explorer.session.who}` : "with the token you had";
  $("token-offer-text").textContent = `The link you opened carried ${whose}. You are still signed in ${mine}; edits are recorded under that name.`;
  $("token-offer-use").hidden = whose === "a token this server refuses";
  $("token-offer").hidden = false;
}

$("token-offer-use").addEventListener("click", () => {
  setToken(offeredToken() || "");
  // Started again under the new token: every answer the page holds was for the old one.
  location.reload();
});
$("token-offer-keep").addEventListener("click", () => {
  declineOfferedToken();
  $("token-offer").hidden = true;
});
// A link pasted into this tab's address bar changes only the fragment: no new page loads, so the
// token it carries is taken out of the address here, and offered like any other.
window.addEventListener("hashchange", () => {
  if (!new URLSearchParams(location.hash.slice(1)).has("token")) return;
  takeTokenFromAddress();
  if (explorer.session) run(offerLinkToken);
  else location.reload();
});

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  setToken($("login-token").value.trim());
  try {
    explorer.session = await get("session");
  } catch (error) {
    const refused = error instanceof ApiError && error.status === 401;
    // A good token, but the link's project is refused: starting in the default one says why.
    if (refused || !(error instanceof ApiError) || !explorer.state.project) {
      $("login-error").textContent = refused ? "That token was refused. Check it and try again." : error.message;
      return;
    }
    explorer.session = null;
  }
  $("login-token").value = "";
  $("login").hidden = true;
  await startInLinkedProject();
});

// ---- projects ----------------------------------------------------------------------------

/** How the page and its requests name a project: "*" for every project, "shared", else its key. */
function projectValue(key) {
  if (key === null || key === undefined) return "*";
  return key === "" ? "shared" : key;
}

/**
 * The projects the session offers, or null for a memory that holds none (everything is in the
 * shared space): then the page says nothing of projects, as before them.
 */
function knownProjects(session = explorer.session) {
  const listed = (session && session.projects) || [];
  const holdsProjects = listed.some((project) => project.key !== "") || (session && session.projectKey !== null);
  return holdsProjects ? listed : null;
}

/** Whether an entity of project `key` shows in the view the session is in. */
function inView(key, session = explorer.session) {
  return session.projectKey === null || key === "" || key === session.projectKey;
}

/** The header's selector: every project the token may reach, "All projects" if it may see them all. */
function renderProjects(session) {
  const listed = knownProjects(session);
  $("project-picker").hidden = listed === null;
  if (listed === null) return;
  // Two projects may share a short name (two clones' folders): those show their whole key.
  const names = listed.map((project) => project.name);
  const options = listed.map((project) => {
    const shown = project.key === "" ? "shared space" : names.filter((name) => name === project.name).length > 1 ? project.key : project.name;
    const count = `${project.entities.toLocaleString("en")} entit${project.entities === 1 ? "y" : "ies"}`;
    return el("option", { value: projectValue(project.key) }, `${shown} (${count})`);
  });
  if (session.allProjects) options.unshift(el("option", { value: "*" }, "All projects"));
  $("project-select").replaceChildren(...options);
  $("project-select").value = projectValue(session.projectKey);
}

/** Show project `value` ("*", "shared" or a key): a fresh view of it, the filters kept. */
async function switchProject(value) {
  explorer.state = { ...emptyState(), project: value, hideTypes: explorer.state.hideTypes, hideRels: explorer.state.hideRels };
  useProject(value);
  saveState();
  hidePanel();
  $("search-input").value = "";
  search.show([], "");
  const [session] = await Promise.all([get("session"), loadOverview()]);
  explorer.session = session;
  renderProjects(session);
  showCounts(session.counts);
  explorer.graph.setFilters(explorer.state.hideTypes, explorer.state.hideRels);
  explorer.graph.layout();
  say(session.project === null ? "Showing every project." : `Showing project ${session.project}${session.projectKey ? " and the shared space" : ""}.`);
}

$("project-select").addEventListener("change", (event) => run(() => switchProject(event.target.value)));

// ---- overview, legend and filters -------------------------------------------------------

function showCounts(counts) {
  const n = (value) => value.toLocaleString("en");
  $("memory-counts").textContent = `${n(counts.entities)} entities · ${n(counts.relations)} relations · ${n(counts.observations)} facts`;
}

function renderLegend() {
  const overview = explorer.overview;
  const counts = new Map((overview ? overview.entityTypes : []).map((t) => [t.type, t.count]));
  const items = knownTypes().map((type) => {
    const shown = !explorer.state.hideTypes.includes(type);
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.backgroundColor = typeColour(type);
    const count = counts.has(type) ? el("span", { class: "legend-count" }, counts.get(type).toLocaleString("en")) : null;
    const name = el("span", { class: "legend-name" }, type);
    // A common type not drawn yet: the click draws its cluster and its most connected entities.
    if (counts.has(type) && !explorer.graph.hasType(type) && !explorer.graph.hasEntityOfType(type)) {
      const button = el("button", { type: "button", class: "legend-item not-drawn", title: `Draw ${type}` }, swatch, name, count);
      button.addEventListener("click", () => run(() => loadType(type)));
      return el("li", {}, button);
    }
    const button = el("button", { type: "button", class: "legend-item", "aria-pressed": String(shown), title: shown ? `Hide ${type}` : `Show ${type}` }, swatch, name, count);
    button.addEventListener("click", () => toggle("hideTypes", type));
    return el("li", {}, button);
  });
  $("legend").replaceChildren(...items);
  const more = overview ? overview.moreEntityTypes : 0;
  $("legend-more").textContent = more ? `and ${more.toLocaleString("en")} rarer type${more === 1 ? "" : "s"} (search finds them)` : "";
  $("legend-toggle").textContent = `Entity types (${(items.length + more).toLocaleString("en")})`;
  const relationTypes = explorer.overview ? explorer.overview.relationTypes : [];
  $("relation-list").replaceChildren(
    ...relationTypes.map(({ type, count }) => {
      const box = el("input", { type: "checkbox" });
      box.checked = !explorer.state.hideRels.includes(type);
      box.addEventListener("change", () => toggle("hideRels", type));
      return el("li", {}, el("label", { class: "legend-item" }, box, el("span", { class: "legend-name" }, type), el("span", { class: "legend-count" }, count.toLocaleString("en"))));
    }),
  );
}

function toggle(key, value) {
  const list = explorer.state[key];
  explorer.state[key] = list.includes(value) ? list.filter((v) => v !== value) : [...list, value];
  explorer.graph.setFilters(explorer.state.hideTypes, explorer.state.hideRels);
  renderLegend();
  saveState();
}

async function loadOverview() {
  const overview = await timed("overview fetched", () => get("overview"));
  explorer.overview = overview;
  explorer.graph.clear();
  for (const { type } of overview.entityTypes) typeColour(type); // the palette in order of size
  const clusters = overview.entityTypes.slice(0, OVERVIEW_CLUSTERS);
  const drawn = new Set(clusters.map(({ type }) => type));
  const perType = new Map();
  const hubs = overview.hubs.filter((hub) => {
    const taken = perType.get(hub.type) || 0;
    perType.set(hub.type, taken + 1);
    return drawn.has(hub.type) && taken < OVERVIEW_HUBS_PER_TYPE;
  });
  // One batch: Cytoscape restyles once, not once per element.
  timed("overview added", () =>
    explorer.graph.cy.batch(() => {
      explorer.graph.addTypeClusters(clusters);
      explorer.graph.addGroup("overview", hubs, overview.relations, { permanent: true });
      explorer.graph.joinToClusters(hubs);
    }),
  );
  renderLegend();
}

// ---- the legend: a disclosure, closed at a phone's width where it would cover the graph ----

function showLegend(open) {
  $("legend-toggle").setAttribute("aria-expanded", String(open));
  $("legend-body").hidden = !open;
}

$("legend-toggle").addEventListener("click", () => {
  showLegend($("legend-toggle").getAttribute("aria-expanded") !== "true");
  explorer.graph.fit();
});
showLegend(!PHONE.matches);

/** What of the graph the legend covers: a strip on its left or its top, whichever is smaller. */
function coveredByLegend() {
  const legend = $("legend-box").getBoundingClientRect();
  const area = $("graph").getBoundingClientRect();
  const left = legend.right - area.left;
  const top = legend.bottom - area.top;
  if (left <= 0 || top <= 0) return {};
  return left * area.height <= top * area.width ? { left } : { top };
}

// ---- what the user draws -----------------------------------------------------------------

/**
 * Forget the groups the graph put away to stay under its cap; returns what to tell the user
 * ("" when nothing went), for the caller to say with its own news, which would otherwise hide it.
 */
function dropped(keys) {
  if (!keys.length) return "";
  const names = keys.map((key) => key.slice(2));
  explorer.state.expand = explorer.state.expand.filter((name) => !keys.includes("n:" + name));
  explorer.state.types = explorer.state.types.filter((type) => !keys.includes("t:" + type));
  return `To keep at most ${MAX_NODES} entities drawn, the oldest expansions were removed: ${names.join(", ")}.`;
}

function protectedNames() {
  return [explorer.state.focus, explorer.state.from, explorer.state.to].filter(Boolean);
}

async function loadType(type, offset = 0, { layout = true } = {}) {
  const page = await get("entities", { type, offset, limit: PAGE });
  const known = explorer.overview && explorer.overview.entityTypes.find((t) => t.type === type);
  explorer.graph.addTypeClusters([known || { type, count: page.total }]);
  const more = { count: page.total - page.offset - page.entities.length, offset: page.offset + page.entities.length };
  const note = dropped(explorer.graph.addGroup("t:" + type, page.entities, page.relations, { memberOf: { type }, more, keep: protectedNames() }));
  if (note) say(note);
  if (!explorer.state.types.includes(type)) explorer.state.types.push(type);
  saveState();
  if (layout) explorer.graph.layout({ incremental: true });
  renderLegend();
}

/** Make sure `name` is drawn (as its own small group); true when it had to be added. */
async function ensureDrawn(name, entity = null) {
  if (explorer.graph.hasEntity(name)) return false;
  const found = entity || (await get("entity", { name }));
  const note = dropped(explorer.graph.addGroup("f:" + found.name, [{ name: found.name, type: found.type, degree: found.degree }], [], { keep: protectedNames() }));
  if (note) say(note);
  return true;
}

async function expand(name, offset = 0, { layout = true } = {}) {
  await ensureDrawn(name);
  const page = await get("neighbours", { name, offset, limit: PAGE });
  const more = { count: page.total - page.offset - page.neighbours.length, offset: page.offset + page.neighbours.length };
  const note = dropped(explorer.graph.addGroup("n:" + name, page.neighbours, page.relations, { memberOf: { name }, more, keep: protectedNames() }));
  if (!explorer.state.expand.includes(name)) explorer.state.expand.push(name);
  saveState();
  if (layout) {
    explorer.graph.layout({ incremental: true });
    explorer.graph.fitAround(name);
  }
  renderLegend();
  say(`${name}: ${page.total.toLocaleString("en")} neighbour${page.total === 1 ? "" : "s"}${more.count > 0 ? `, ${more.count.toLocaleString("en")} more not drawn` : ""}.${note ? " " + note : ""}`);
}

// ---- the panel ---------------------------------------------------------------------------

const panelActions = {
  open: (name) => run(() => openEntity(name)),
  expand: (name) => run(() => expand(name)),
  pathFrom: (name) => run(() => setPathEnd("from", name)),
  pathTo: (name) => run(() => setPathEnd("to", name)),
  edit: (action, body) => run(() => edit(action, body)),
};

explorer.actions = panelActions;

function run(work) {
  return tracked(work).catch(report);
}

function showPanel(title) {
  $("panel").hidden = false;
  $("panel-title").textContent = title;
  document.body.classList.add("panel-open");
  explorer.graph.cy.resize();
}

function hidePanel() {
  $("panel").hidden = true;
  document.body.classList.remove("panel-open");
  explorer.graph.cy.resize();
}

function closePanel() {
  hidePanel();
  explorer.graph.cy.nodes(":selected").unselect();
  explorer.state.focus = null;
  saveState();
}

async function openEntity(name, { focusPanel = true } = {}) {
  let entity;
  let neighbours;
  try {
    [entity, neighbours] = await Promise.all([get("entity", { name }), get("neighbours", { name, limit: PAGE })]);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      say(`No entity is named “${name}” (it may have been renamed, merged or deleted).`, { error: true });
      return;
    }
    throw error;
  }
  const added = await ensureDrawn(entity.name, entity);
  // The neighbours already drawn get their edges to it; nothing new is drawn until "Expand".
  explorer.graph.addRelations(neighbours.relations);
  explorer.graph.applyFilters();
  // Placed beside what it belongs to, it may sit on another node's label: push them apart.
  if (added) separateLabels(explorer.graph.cy);
  fillPanel(entity, neighbours);
  const node = explorer.graph.entityNode(entity.name);
  explorer.graph.cy.nodes(":selected").unselect();
  node.select();
  if (!node.position("x") && !node.position("y")) explorer.graph.layout({ incremental: true });
  const sheet = $("panel").getBoundingClientRect();
  const area = $("graph").getBoundingClientRect();
  // At a phone's width the panel is a bottom sheet over the graph, not beside it.
  const covered = sheet.left <= area.left && sheet.top > area.top ? Math.max(0, area.bottom - sheet.top) : 0;
  explorer.graph.focusOn(node, covered);
  explorer.state.focus = entity.name;
  saveState();
  if (focusPanel) $("panel-title").focus();
}

function fillPanel(entity, neighbours) {
  showPanel(entity.name);
  renderEntity($("panel-body"), entity, neighbours, explorer.session.canWrite, panelActions, movesTo());
}

/**
 * The projects an entity may be moved to from the panel (null: the memory holds no projects).
 * A token limited to projects may not write the shared space alone, so it is not offered to one.
 */
function movesTo() {
  const listed = knownProjects();
  if (listed === null) return null;
  return listed.filter((project) => project.key !== "" || explorer.session.allProjects);
}

async function setPathEnd(end, name) {
  explorer.state[end] = name;
  saveState();
  const { from, to } = explorer.state;
  if (from && to && from !== to) {
    await findPath(from, to);
  } else {
    say(end === "from" ? `Path from ${name}: open another entity and choose “Path to here”.` : `Path to ${name}: open another entity and choose “Path from here”.`);
  }
}

async function findPath(from, to, { layout = true } = {}) {
  const result = await get("path", { from, to });
  let note = "";
  if (result.found) {
    note = dropped(explorer.graph.addGroup("p:" + from + "→" + to, result.entities, result.relations, { keep: protectedNames() }));
    explorer.graph.markPath(result.entities, result.relations);
    if (layout) explorer.graph.layout({ incremental: true });
  }
  showPanel(`Path from ${from} to ${to}`);
  renderPath($("panel-body"), result, from, to, panelActions);
  say((result.found ? `Path found: ${result.entities.length - 1} hops.` : `No path joins ${from} and ${to}.`) + (note ? " " + note : ""));
}

// ---- edits -------------------------------------------------------------------------------

async function edit(action, body) {
  const answer = await post(action, body);
  const graph = explorer.graph;
  if (action === "relations/add") {
    await ensureDrawn(body.to);
    graph.addRelations([body]);
  } else if (action === "relations/delete") {
    graph.removeRelation(body);
  } else if (action === "entities/rename" || action === "entities/merge") {
    const old = action === "entities/rename" ? body.name : body.source;
    graph.removeEntity(old);
    explorer.state.expand = explorer.state.expand.filter((name) => name !== old);
  }
  graph.applyFilters();
  // The server's notes in sentences (a secret it took out, a relation to no entity yet) follow.
  say([answer.message || "Saved.", ...(answer.notes || [])].join(" "));
  if (action === "entities/move" && answer.entity) {
    await followMoved(answer.entity, answer.message);
  } else if (answer.entity) {
    await openEntity(answer.entity.name, { focusPanel: false });
    if (action === "entities/rename" || action === "entities/merge") graph.layout({ incremental: true });
  } else {
    closePanel();
  }
}

/**
 * Show a moved entity where it now lives: the view stays when it still shows the entity (every
 * project, or a move into the shared space), else the page follows it to its new project.
 */
async function followMoved(entity, message) {
  if (inView(entity.projectKey)) {
    // The selector's counts changed with the move.
    explorer.session = await get("session");
    renderProjects(explorer.session);
    showCounts(explorer.session.counts);
    await openEntity(entity.name, { focusPanel: false });
    say(message);
    return;
  }
  await switchProject(projectValue(entity.projectKey));
  await openEntity(entity.name, { focusPanel: false });
  say(`${message} Now showing project ${entity.project}, where ${entity.name} is.`);
}

// ---- start -------------------------------------------------------------------------------

async function start() {
  // Cytoscape draws on the next animation frame: marked when the overview is first on screen.
  explorer.graph.cy.one("render", () => performance.mark("graphmem: drawn"));
  // Both at once: each is a round trip to a server that may be busy.
  const [session] = await Promise.all([
    explorer.session || timed("session fetched", () => get("session")),
    loadOverview(),
  ]);
  explorer.session = session;
  showWho(session);
  renderProjects(session);
  showCounts(explorer.session.counts);
  $("new-entity-button").hidden = !explorer.session.canWrite;
  $("undo-import-button").hidden = !explorer.session.canWrite;
  const state = explorer.state;
  const restoring = { types: [...state.types], expand: [...state.expand], from: state.from, to: state.to, focus: state.focus, q: state.q };
  explorer.graph.setFilters(state.hideTypes, state.hideRels);
  for (const type of restoring.types) await loadType(type, 0, { layout: false }).catch(report);
  for (const name of restoring.expand) await expand(name, 0, { layout: false }).catch(report);
  explorer.graph.layout();
  if (restoring.from && restoring.to) await findPath(restoring.from, restoring.to).catch(report);
  if (restoring.focus) await openEntity(restoring.focus, { focusPanel: false }).catch(report);
  if (restoring.q) {
    $("search-input").value = restoring.q;
    await search.search();
  }
  explorer.ready = true;
  showActivity();
}

explorer.graph = new Graph($("graph"), coveredByLegend);
const search = new Search({
  input: $("search-input"),
  list: $("search-results"),
  summary: $("search-summary"),
  run: (query) =>
    tracked(async () => {
      explorer.state.q = query;
      saveState();
      return get("search", { q: query, limit: 20 });
    }).catch(report),
  open: (name) => panelActions.open(name),
});

explorer.graph.cy.on("tap", "node", (event) => {
  const node = event.target;
  if (node.hasClass("entity")) panelActions.open(node.data("name"));
  else if (node.hasClass("type-cluster")) run(() => loadType(node.data("type")));
  else if (node.hasClass("more")) {
    const { key, offset, memberOf } = node.data();
    run(() => (memberOf.type ? loadType(memberOf.type, offset) : expand(memberOf.name, offset)));
    void key;
  }
});

$("panel-close").addEventListener("click", () => {
  closePanel();
  $("search-input").focus();
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !$("panel").hidden) {
    closePanel();
    $("search-input").focus();
  }
});
$("overview-button").addEventListener("click", () =>
  run(async () => {
    explorer.state = { ...emptyState(), project: explorer.state.project, hideTypes: explorer.state.hideTypes, hideRels: explorer.state.hideRels };
    $("panel").hidden = true;
    document.body.classList.remove("panel-open");
    explorer.graph.cy.resize();
    await loadOverview();
    explorer.graph.setFilters(explorer.state.hideTypes, explorer.state.hideRels);
    explorer.graph.layout();
    saveState();
  }),
);
$("new-entity-button").addEventListener("click", () => {
  showPanel("New entity");
  renderNewEntity($("panel-body"), panelActions);
});
$("duplicates-button").addEventListener("click", () =>
  run(async () => {
    const page = await get("duplicates", { offset: 0 });
    showPanel("Duplicates");
    renderDuplicates($("panel-body"), page, explorer.session.canWrite, panelActions);
  }),
);
$("undo-import-button").addEventListener("click", async () => {
  // The newest change made by an import; undoing it takes back everything that import added.
  const page = await get("changes", { tool: "import" }).catch(report);
  const last = page && page.changes[0];
  if (!last) {
    say("No import is recorded in this memory's history.");
    return;
  }
  const what = last.did.slice(0, 3).join("; ");
  if (!window.confirm(`Undo the import of ${last.at} (change ${last.seq}: ${what})? It is taken back by a new change.`)) return;
  await edit("changes/undo", { seq: last.seq }).catch(report);
  await loadOverview().catch(report);
});
$("share-button").addEventListener("click", async () => {
  const link = shareLink(explorer.state);
  try {
    await navigator.clipboard.writeText(link);
    say("Link to this view copied: " + link);
  } catch {
    say("Link to this view: " + link);
  }
});
// Whatever moves or resizes the graph (the window, the panel, a message in the status strip, which
// takes no room when empty): Cytoscape must hear of it, or it maps clicks to where nodes were.
new ResizeObserver(() => explorer.graph.cy.resize()).observe($("graph"));

/**
 * Start, and when the link names a project this server no longer holds, or one the token may not
 * reach, start again in the default one, saying why: a shared link must not leave a blank page.
 */
async function startInLinkedProject() {
  try {
    await start();
  } catch (error) {
    if (!(error instanceof ApiError && (error.status === 400 || error.status === 403)) || !explorer.state.project) throw error;
    explorer.state.project = null;
    useProject(null);
    saveState();
    explorer.session = null;
    await start();
    say(`${error.message} Showing ${explorer.session.project === null ? "every project" : "project " + explorer.session.project} instead.`, { error: true });
  }
}

tracked(async () => {
  try {
    try {
      await startInLinkedProject();
    } catch (error) {
      // The tab's own token is refused (a server started again with new tokens, as each
      // `graphmem view` run is): the link's token is used instead, and the page says so.
      if (!(error instanceof ApiError && error.status === 401) || offeredToken() === null) throw error;
      setToken(offeredToken());
      explorer.session = null;
      await start();
      say(`The token this tab held was refused, so the link's token is used: ${$("signed-in").textContent}.`);
    }
    await offerLinkToken();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) askForToken();
    else report(error);
  }
});
