// The view's state, mirrored in the address's fragment so that a copied link reopens the same view.
//
// Only names, filters and the project live there, never the token. The fragment, not the query, holds it
// because a fragment never reaches the server or its logs.

/** A fresh, empty view. */
export function emptyState() {
  return { project: null, focus: null, expand: [], types: [], hideTypes: [], hideRels: [], from: null, to: null, q: "" };
}

/** Read a state from fragment parameters (URLSearchParams). */
export function parseState(params) {
  const state = emptyState();
  state.project = params.get("project");
  state.focus = params.get("focus");
  state.expand = params.getAll("expand");
  state.types = params.getAll("type");
  state.hideTypes = params.getAll("hideType");
  state.hideRels = params.getAll("hideRel");
  state.from = params.get("from");
  state.to = params.get("to");
  state.q = params.get("q") || "";
  return state;
}

/** The fragment (without '#') that holds `state`. */
export function formatState(state) {
  const params = new URLSearchParams();
  if (state.project) params.set("project", state.project);
  if (state.focus) params.set("focus", state.focus);
  for (const name of state.expand) params.append("expand", name);
  for (const type of state.types) params.append("type", type);
  for (const type of state.hideTypes) params.append("hideType", type);
  for (const type of state.hideRels) params.append("hideRel", type);
  if (state.from) params.set("from", state.from);
  if (state.to) params.set("to", state.to);
  if (state.q) params.set("q", state.q);
  return params.toString();
}

/** Put `state` in the address bar without a new history entry. */
export function writeState(state) {
  const fragment = formatState(state);
  history.replaceState(null, "", location.pathname + location.search + (fragment ? "#" + fragment : ""));
}

/** The full link to this view. */
export function shareLink(state) {
  const fragment = formatState(state);
  return location.origin + location.pathname + (fragment ? "#" + fragment : "");
}
