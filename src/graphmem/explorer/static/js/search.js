// The search box: a combobox over the ranked search (/api/search). Arrow keys move through the
// results, Enter opens one, Escape closes the list; the count is announced to screen readers.

import { el } from "./dom.js";
import { typeColour } from "./graph.js";

export class Search {
  constructor({ input, list, summary, run, open }) {
    this.input = input;
    this.list = list;
    this.summary = summary;
    this.run = run; // (query) => Promise<answer of /api/search>
    this.open = open; // (name) => void
    this.results = [];
    this.active = -1;
    this.timer = null;
    this.latest = 0;
    this.shownFor = null;
    input.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.search(), 200);
    });
    input.addEventListener("keydown", (event) => this.key(event));
    list.addEventListener("mousedown", (event) => event.preventDefault()); // keep focus in the box
  }

  async search() {
    clearTimeout(this.timer);
    const query = this.input.value.trim();
    const ticket = ++this.latest;
    if (!query) {
      this.show([], "");
      return;
    }
    const answer = await this.run(query);
    if (ticket !== this.latest || !answer) return; // a newer search has started
    this.shownFor = query;
    this.show(answer.results, answer.more ? `${answer.results.length}+ results` : `${answer.results.length} result${answer.results.length === 1 ? "" : "s"}`);
  }

  show(results, summary) {
    this.results = results;
    this.active = results.length ? 0 : -1;
    const items = results.map((result, index) => {
      const dot = el("span", { class: "swatch", "aria-hidden": "true" });
      dot.style.backgroundColor = typeColour(result.type);
      const item = el(
        "li",
        { role: "option", id: "search-option-" + index, class: "search-option", "aria-selected": "false" },
        el("span", { class: "option-name" }, dot, result.name),
        // Seen across projects, one name may be two entities: each hit says where it lives.
        el("span", { class: "option-type" }, result.type, result.project ? el("span", { class: "option-project" }, ` · ${result.project}`) : null),
        result.match ? el("span", { class: "option-match" }, result.match) : null,
      );
      item.addEventListener("click", () => this.choose(index));
      return item;
    });
    if (this.input.value.trim() && !results.length) items.push(el("li", { class: "search-empty" }, "Nothing matches."));
    this.list.replaceChildren(...items);
    const open = items.length > 0;
    this.list.hidden = !open;
    this.input.setAttribute("aria-expanded", String(open));
    this.summary.textContent = this.input.value.trim() ? summary || "No results" : "";
    this.highlight();
  }

  highlight() {
    this.list.querySelectorAll("[role=option]").forEach((option, index) => {
      option.setAttribute("aria-selected", String(index === this.active));
    });
    if (this.active >= 0) {
      this.input.setAttribute("aria-activedescendant", "search-option-" + this.active);
      document.getElementById("search-option-" + this.active).scrollIntoView({ block: "nearest" });
    } else {
      this.input.removeAttribute("aria-activedescendant");
    }
  }

  close() {
    this.list.hidden = true;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  choose(index) {
    const result = this.results[index];
    if (!result) return;
    this.close();
    this.open(result.name);
  }

  async key(event) {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (this.list.hidden && this.results.length) {
        this.list.hidden = false;
        this.input.setAttribute("aria-expanded", "true");
      }
      if (!this.results.length) return;
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.results.length) % this.results.length;
      this.highlight();
    } else if (event.key === "Enter") {
      event.preventDefault();
      // Enter on a fresh query searches first; Enter on shown results opens the highlighted one.
      if (this.list.hidden || this.pending()) {
        await this.search();
      } else {
        this.choose(this.active);
      }
    } else if (event.key === "Escape" && !this.list.hidden) {
      event.preventDefault();
      event.stopPropagation();
      this.close();
    }
  }

  pending() {
    return this.shownFor !== this.input.value.trim();
  }
}
