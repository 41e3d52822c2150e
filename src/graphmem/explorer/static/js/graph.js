// The drawing: one Cytoscape instance, what is on it, and how it is laid out.
//
// The page never holds the whole memory. What is drawn comes in groups (the overview, one
// entity type's page, one entity's neighbours); when more than MAX_NODES entities are drawn,
// the oldest groups go first. Layout is always fCoSE: Cytoscape's built-in cose takes about a
// minute on 2,000 nodes.

/* global cytoscape */

import { timed } from "./timing.js";

export const MAX_NODES = 400;

// Paul Tol's "bright" and Okabe-Ito colours: told apart with the common colour-vision deficiencies.
const PALETTE = [
  "#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377",
  "#E69F00", "#7F3C8D", "#8C564B", "#555555",
];
const colours = new Map();

/** The colour of an entity type: the palette in order of first sight, then spread hues. */
export function typeColour(type) {
  let colour = colours.get(type);
  if (colour) return colour;
  const index = colours.size;
  if (index < PALETTE.length) {
    colour = PALETTE[index];
  } else {
    // Past the palette, steps of the golden angle by order of sight (a hash of the name put six
    // of 30 types in one magenta), and three lightnesses in turn so that near hues still differ.
    const step = index - PALETTE.length;
    colour = `hsl(${Math.round((20 + step * 137.508) % 360)}, ${[60, 45, 70][step % 3]}%, ${[40, 58, 30][step % 3]}%)`;
  }
  colours.set(type, colour);
  return colour;
}

export function knownTypes() {
  return [...colours.keys()];
}

const measure = document.createElement("canvas").getContext("2d");

/** The width of a boxed label: Cytoscape's own `width: label` is deprecated. */
function boxWidth(text, font, padding) {
  measure.font = font;
  return Math.ceil(measure.measureText(text).width) + 2 * padding;
}

const entityId = (name) => "e:" + name;
const typeId = (type) => "t:" + type;
const relationId = (r) => "r:" + JSON.stringify([r.from, r.relationType, r.to]);

function entitySize(degree) {
  return Math.min(48, 18 + 5 * Math.log2(1 + (degree || 0)));
}

const STYLE = [
  {
    selector: "node",
    style: {
      label: "data(label)",
      "font-family": "system-ui, sans-serif",
      // 13, not 12: the overview of a big memory is fitted at about 0.8, and labels stay at 10px.
      "font-size": 13,
      color: "#1d2433",
      "text-valign": "bottom",
      "text-margin-y": 4,
      "text-outline-color": "#ffffff",
      "text-outline-width": 2.5,
      "text-wrap": "ellipsis",
      "text-max-width": "130px",
      "min-zoomed-font-size": 7,
      "background-color": "data(colour)",
      width: "data(size)",
      height: "data(size)",
      "border-width": 1.5,
      "border-color": "#ffffff",
    },
  },
  {
    selector: "node.type-cluster",
    style: {
      shape: "round-rectangle",
      "background-opacity": 0.18,
      "border-width": 2,
      "border-color": "data(colour)",
      "font-size": 13,
      "font-weight": "bold",
      "text-valign": "center",
      "text-margin-y": 0,
      "text-outline-width": 0,
      // Its type and count are the whole point: never cut (the box is measured to hold them).
      "text-wrap": "none",
      "text-max-width": "1000px",
      color: "#1d2433",
      width: "data(width)",
      height: "data(height)",
    },
  },
  {
    selector: "node.more",
    style: {
      shape: "round-rectangle",
      "background-color": "#f2f4f8",
      "border-width": 1,
      "border-style": "dashed",
      "border-color": "#8a94a6",
      "text-valign": "center",
      "text-margin-y": 0,
      "text-outline-width": 0,
      color: "#44506a",
      "font-size": 11,
      width: "data(width)",
      height: 22,
    },
  },
  {
    selector: "edge",
    style: {
      width: 1.4,
      "line-color": "#b7bfcc",
      "target-arrow-color": "#b7bfcc",
      "target-arrow-shape": "triangle",
      "arrow-scale": 0.8,
      "curve-style": "bezier",
      "font-size": 10,
      color: "#44506a",
      "text-rotation": "autorotate",
      "text-background-color": "#ffffff",
      "text-background-opacity": 1,
      "text-background-padding": "2px",
    },
  },
  { selector: "edge.member", style: { "line-style": "dashed", "line-color": "#dde2ea", "target-arrow-shape": "none", width: 1 } },
  { selector: "edge.labelled, edge.hover, edge:selected", style: { label: "data(relationType)" } },
  { selector: "node:selected", style: { "border-width": 3, "border-color": "#1d2433" } },
  { selector: "node.path", style: { "border-width": 3, "border-color": "#d1495b" } },
  { selector: "edge.path", style: { width: 3, "line-color": "#d1495b", "target-arrow-color": "#d1495b", label: "data(relationType)" } },
  { selector: ".filtered", style: { display: "none" } },
];

/** The drawing and what it holds. */
export class Graph {
  /** `covered()` says what of the container is under other things ({left, top, right, bottom} px). */
  constructor(container, covered = () => ({})) {
    this.covered = covered;
    this.cy = cytoscape({
      container,
      style: STYLE,
      minZoom: 0.1,
      maxZoom: 3,
      boxSelectionEnabled: false,
    });
    this.groups = []; // [{key, names: Set, permanent}] oldest first
    this.hiddenTypes = new Set();
    this.hiddenRelations = new Set();
    this.cy.on("mouseover", "edge", (event) => event.target.addClass("hover"));
    this.cy.on("mouseout", "edge", (event) => event.target.removeClass("hover"));
    // A long name is cut on the canvas: pointing at it shows it whole (the panel has it too).
    this.cy.on("mouseover", "node.entity", (event) => {
      container.title = event.target.data("name");
    });
    this.cy.on("mouseout", "node", () => container.removeAttribute("title"));
  }

  clear() {
    this.cy.elements().remove();
    this.groups = [];
  }

  entityCount() {
    return this.cy.nodes(".entity").length;
  }

  hasType(type) {
    return this.cy.getElementById(typeId(type)).nonempty();
  }

  hasEntityOfType(type) {
    return this.cy.nodes(".entity").some((node) => node.data("type") === type);
  }

  hasEntity(name) {
    return this.cy.getElementById(entityId(name)).nonempty();
  }

  entityNode(name) {
    return this.cy.getElementById(entityId(name));
  }

  /** Draw the overview's entity types as clusters, one node each, sized and labelled by count. */
  addTypeClusters(entityTypes) {
    for (const { type, count } of entityTypes) {
      if (this.cy.getElementById(typeId(type)).nonempty()) continue;
      const label = `${type} · ${count.toLocaleString("en")}`;
      this.cy.add({
        group: "nodes",
        classes: "type-cluster",
        data: { id: typeId(type), type, count, colour: typeColour(type), label,
          // Sized by count, within bounds: a million people must not cover the screen.
          width: boxWidth(label, "bold 13px system-ui, sans-serif", 12 + Math.min(20, 3 * Math.log10(1 + count))),
          height: 28 + Math.min(22, 4 * Math.log10(1 + count)),
        },
      });
    }
  }

  /**
   * Draw a group of entities (cards) and relations. `anchor` (an entity name or `{type}`) is joined
   * to the group's entities; `more` ({count, offset}) adds an "n more" node to it.
   * Returns the keys of older groups dropped to stay under MAX_NODES.
   */
  addGroup(key, cards, relations, { permanent = false, memberOf = null, more = null, keep = [] } = {}) {
    let group = this.groups.find((g) => g.key === key);
    if (!group) {
      group = { key, names: new Set(), permanent };
      this.groups.push(group);
    }
    for (const card of cards) {
      const node = this.cy.getElementById(entityId(card.name));
      if (node.nonempty()) {
        node.data("degree", card.degree);
        continue;
      }
      group.names.add(card.name);
      this.cy.add({
        group: "nodes",
        classes: "entity",
        data: {
          id: entityId(card.name),
          name: card.name,
          label: card.name,
          type: card.type,
          degree: card.degree,
          size: entitySize(card.degree),
          colour: typeColour(card.type),
        },
        position: this.nearPosition(memberOf),
      });
    }
    if (memberOf && memberOf.type) {
      const cluster = this.cy.getElementById(typeId(memberOf.type));
      if (cluster.nonempty()) {
        for (const card of cards) this.addMemberEdge(cluster, entityId(card.name));
      }
    }
    this.addRelations(relations);
    this.setMore(key, memberOf, more);
    const dropped = this.trim(new Set([key]), new Set(keep));
    this.applyFilters();
    return dropped;
  }

  /** Join each hub to its type's cluster, so that the overview draws types as neighbourhoods. */
  joinToClusters(cards) {
    for (const card of cards) {
      const cluster = this.cy.getElementById(typeId(card.type));
      if (cluster.nonempty()) this.addMemberEdge(cluster, entityId(card.name));
    }
  }

  addMemberEdge(cluster, targetId) {
    const id = "k:" + cluster.id() + "\u0000" + targetId;
    if (this.cy.getElementById(id).nonempty() || this.cy.getElementById(targetId).empty()) return;
    this.cy.add({ group: "edges", classes: "member", data: { id, source: cluster.id(), target: targetId } });
  }

  addRelations(relations) {
    for (const relation of relations) {
      const id = relationId(relation);
      if (this.cy.getElementById(id).nonempty()) continue;
      if (!this.hasEntity(relation.from) || !this.hasEntity(relation.to)) continue;
      this.cy.add({
        group: "edges",
        data: {
          id,
          source: entityId(relation.from),
          target: entityId(relation.to),
          from: relation.from,
          to: relation.to,
          relationType: relation.relationType,
        },
      });
    }
  }

  removeRelation(relation) {
    this.cy.getElementById(relationId(relation)).remove();
  }

  removeEntity(name) {
    this.cy.getElementById(entityId(name)).remove();
    for (const group of this.groups) group.names.delete(name);
  }

  setMore(key, memberOf, more) {
    const id = "m:" + key;
    this.cy.getElementById(id).remove();
    if (!more || more.count <= 0 || !memberOf) return;
    const label = `${more.count.toLocaleString("en")} more`;
    const anchorId = memberOf.type ? typeId(memberOf.type) : entityId(memberOf.name);
    if (this.cy.getElementById(anchorId).empty()) return;
    this.cy.add({
      group: "nodes",
      classes: "more",
      data: { id, key, offset: more.offset, label, memberOf, colour: "#f2f4f8", width: boxWidth(label, "11px system-ui, sans-serif", 8) },
      position: this.nearPosition(memberOf),
    });
    this.cy.add({ group: "edges", classes: "member", data: { id: "k:" + id, source: anchorId, target: id } });
  }

  nearPosition(memberOf) {
    let anchor = null;
    if (memberOf) anchor = this.cy.getElementById(memberOf.type ? typeId(memberOf.type) : entityId(memberOf.name));
    const centre = anchor && anchor.nonempty() ? anchor.position() : { x: 0, y: 0 };
    const angle = Math.random() * 2 * Math.PI;
    return { x: centre.x + 60 * Math.cos(angle), y: centre.y + 60 * Math.sin(angle) };
  }

  /** Drop the oldest non-permanent groups until at most MAX_NODES entities are drawn. */
  trim(protectedKeys, keepNames) {
    const dropped = [];
    while (this.entityCount() > MAX_NODES) {
      const oldest = this.groups.find((g) => !g.permanent && !protectedKeys.has(g.key));
      if (!oldest) break;
      this.groups.splice(this.groups.indexOf(oldest), 1);
      for (const name of oldest.names) {
        if (!keepNames.has(name)) this.cy.getElementById(entityId(name)).remove();
      }
      this.cy.getElementById("m:" + oldest.key).remove();
      dropped.push(oldest.key);
    }
    return dropped;
  }

  setFilters(hiddenTypes, hiddenRelations) {
    this.hiddenTypes = new Set(hiddenTypes);
    this.hiddenRelations = new Set(hiddenRelations);
    this.applyFilters();
  }

  applyFilters() {
    this.cy.batch(() => {
      this.cy.nodes(".entity, .type-cluster").forEach((node) => {
        node.toggleClass("filtered", this.hiddenTypes.has(node.data("type")));
      });
      this.cy.edges().not(".member").forEach((edge) => {
        edge.toggleClass("filtered", this.hiddenRelations.has(edge.data("relationType")));
      });
      // Relation labels are drawn only when they cannot pile up.
      const visibleEdges = this.cy.edges(":visible").not(".member");
      this.cy.edges().removeClass("labelled");
      if (visibleEdges.length <= 12) visibleEdges.addClass("labelled");
    });
  }

  markPath(cards, relations) {
    this.cy.elements(".path").removeClass("path");
    for (const card of cards) this.entityNode(card.name).addClass("path");
    for (const relation of relations) this.cy.getElementById(relationId(relation)).addClass("path");
  }

  /** Fit the view to `name` and its drawn neighbours: what was just expanded, big enough to read. */
  fitAround(name) {
    const node = this.entityNode(name);
    if (node.nonempty()) this.fit(40, 0, node.closedNeighborhood(":visible"));
  }

  /** Lay everything out with fCoSE, keep labels apart, and fit the view. */
  layout({ incremental = false } = {}) {
    const visible = this.cy.elements(":visible");
    if (visible.empty()) return;
    timed("layout", () => visible
      .layout({
        name: "fcose",
        quality: incremental ? "proof" : "default",
        randomize: !incremental,
        animate: false,
        fit: false,
        nodeDimensionsIncludeLabels: true,
        nodeSeparation: 60,
        idealEdgeLength: (edge) => (edge.hasClass("member") ? 50 : 80),
        nodeRepulsion: () => 4500,
        packComponents: true,
      })
      .run());
    timed("labels apart", () => separateLabels(this.cy));
    this.fit();
  }

  /** Bring `node` to the middle of what is not covered (a phone's bottom sheet covers `coveredBottom` px). */
  focusOn(node, coveredBottom = 0) {
    // Zoomed out over a big overview, labels are too small to read: come close enough for them.
    if (this.cy.zoom() < 0.9) this.cy.zoom(1);
    this.cy.center(node);
    if (coveredBottom > 0) this.cy.panBy({ x: 0, y: -coveredBottom / 2 });
  }

  /**
   * Fit what is drawn into the part of the view that nothing covers (the legend). Where that
   * would make labels unreadable (a phone), zoom no further out than `readable` and centre on
   * the biggest cluster instead: the rest is a pan away.
   */
  fit(padding = 24, readable = 0.75, only = null) {
    const visible = only || this.cy.elements(":visible");
    if (visible.empty()) return;
    const { left = 0, top = 0, right = 0, bottom = 0 } = this.covered();
    const box = visible.boundingBox();
    const width = Math.max(50, this.cy.width() - left - right - 2 * padding);
    const height = Math.max(50, this.cy.height() - top - bottom - 2 * padding);
    // At most 1.4: a handful of nodes would otherwise be blown up to fill the screen.
    const zoom = Math.max(this.cy.minZoom(), Math.min(1.4, width / Math.max(1, box.w), height / Math.max(1, box.h)));
    const biggest = this.cy.nodes(".type-cluster:visible").max((node) => node.data("count")).ele;
    if (zoom < readable && biggest && this.cy.width() < 700 && !only) {
      const at = biggest.position();
      this.cy.viewport({ zoom: readable, pan: { x: left + padding + width / 2 - readable * at.x, y: top + padding + height / 2 - readable * at.y } });
      return;
    }
    this.cy.viewport({
      zoom,
      pan: {
        x: left + padding + width / 2 - zoom * (box.x1 + box.w / 2),
        y: top + padding + height / 2 - zoom * (box.y1 + box.h / 2),
      },
    });
  }
}

/**
 * Move nodes apart until no two label boxes (node and label together) overlap. fCoSE counts
 * labels in node sizes but still leaves a few touching; a sweep over x keeps this near-linear.
 */
export function separateLabels(cy, gap = 4) {
  const nodes = cy.nodes(":visible");
  const boxes = nodes.map((node) => ({ node, box: node.boundingBox({ includeLabels: true }) }));
  for (let round = 0; round < 200; round += 1) {
    boxes.sort((a, b) => a.box.x1 - b.box.x1);
    let moved = false;
    for (let i = 0; i < boxes.length; i += 1) {
      const a = boxes[i];
      for (let j = i + 1; j < boxes.length && boxes[j].box.x1 < a.box.x2 + gap; j += 1) {
        const b = boxes[j];
        const overlapX = Math.min(a.box.x2, b.box.x2) - Math.max(a.box.x1, b.box.x1) + gap;
        const overlapY = Math.min(a.box.y2, b.box.y2) - Math.max(a.box.y1, b.box.y1) + gap;
        if (overlapX <= 0 || overlapY <= 0) continue;
        moved = true;
        const ax = (a.box.x1 + a.box.x2) / 2;
        const bx = (b.box.x1 + b.box.x2) / 2;
        const ay = (a.box.y1 + a.box.y2) / 2;
        const by = (b.box.y1 + b.box.y2) / 2;
        // Push along the axis that needs the shorter move, half each way.
        if (overlapX < overlapY) {
          const d = (overlapX / 2 + 0.5) * (ax <= bx ? 1 : -1);
          shift(a, -d, 0);
          shift(b, d, 0);
        } else {
          const d = (overlapY / 2 + 0.5) * (ay <= by ? 1 : -1);
          shift(a, 0, -d);
          shift(b, 0, d);
        }
      }
    }
    if (!moved) return;
  }
}

function shift(entry, dx, dy) {
  const position = entry.node.position();
  entry.node.position({ x: position.x + dx, y: position.y + dy });
  entry.box = { x1: entry.box.x1 + dx, x2: entry.box.x2 + dx, y1: entry.box.y1 + dy, y2: entry.box.y2 + dy };
}
