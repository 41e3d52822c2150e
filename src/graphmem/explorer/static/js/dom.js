// Building DOM nodes. Text from the memory is untrusted: it only ever goes in through textContent.

/**
 * `el("button", {type: "button", class: "x", onclick: f}, "text", child)`: attributes by name
 * ("on..." are listeners, "class" the class list), children as nodes or text.
 */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

let fieldCount = 0;

/** A labelled field: `<label for=id>` and its input (or textarea/select given as `control`). */
export function field(label, control) {
  fieldCount += 1;
  control.id = control.id || "field-" + fieldCount;
  return el("div", { class: "field" }, el("label", { for: control.id }, label), control);
}

/** "2026-05-01 14:03" from an ISO time, or "" when there is none. */
export function shortTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().slice(0, 16).replace("T", " ");
}
