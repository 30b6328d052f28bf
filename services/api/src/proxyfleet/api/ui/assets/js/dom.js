// Elements built with textContent only: nothing the API says ever becomes markup.

const SVG_NS = "http://www.w3.org/2000/svg";

/** An element; `text` sets its textContent, string children become text nodes. */
export function el(tag, attrs = {}, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element (attributes as given: callers pass numbers and constants). */
export function svg(tag, attrs = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "testid") node.dataset.testid = String(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  node.append(...children); // strings are appended as Text nodes, never parsed
  return node;
}

/** Sets a node's text only when it changed (no needless DOM mutations). */
export function setText(node, text) {
  const value = String(text);
  if (node.textContent !== value) node.textContent = value;
}

export const byId = (id) => document.getElementById(id);
