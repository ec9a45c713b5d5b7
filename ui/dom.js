// @ts-check
/* global document */
/**
 * The page builds its DOM only through `el`: text always goes in as text nodes (never parsed as
 * HTML), and attributes come from a short allow-list that holds no event handler, URL or style
 * attribute, so no chat content can turn into markup, script or a request. The page's CSP
 * (`require-trusted-types-for 'script'`) makes any HTML string assignment throw besides.
 */

/** Attributes `el` may set (event handlers go through `on`, never through attributes). */
const ATTRIBUTES = new Set([
  'class',
  'id',
  'title',
  'type',
  'role',
  'name',
  'for',
  'placeholder',
  'autocomplete',
  'value',
  'alt',
  'tabindex',
  'aria-label',
  'aria-live',
  'aria-expanded',
  'aria-controls',
  'aria-current',
  'aria-pressed',
  'spellcheck',
  'hidden',
]);

/**
 * @typedef {string | number | Node | null | undefined | false} Child
 * @typedef {{
 *   attrs?: Record<string, string | number | boolean | undefined>,
 *   data?: Record<string, string | number>,
 *   on?: Record<string, (event: Event) => void>,
 * }} Props
 */

/**
 * Creates an element with allow-listed attributes, data attributes, listeners and children
 * (strings become text nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props | string | null} [props] props, or a class name
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  const p = typeof props === 'string' ? { attrs: { class: props } } : (props ?? {});
  for (const [name, value] of Object.entries(p.attrs ?? {})) {
    if (!ATTRIBUTES.has(name)) throw new Error(`attribute ${name} is not allowed`);
    if (value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const [name, value] of Object.entries(p.data ?? {})) node.dataset[name] = String(value);
  for (const [name, listener] of Object.entries(p.on ?? {})) node.addEventListener(name, listener);
  append(node, children);
  return node;
}

/**
 * Appends children: strings and numbers as text nodes, nodes as they are, nothing for empty values.
 * @param {Node} parent
 * @param {Array<Child | Child[]>} children
 */
export function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/**
 * Replaces every child of `parent`.
 * @param {Element} parent
 * @param {...(Child | Child[])} children
 */
export function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * The element with this id (the page's own markup); throws when the page lacks it.
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} type
 * @returns {T}
 */
export function byId(id, type) {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`#${id} is missing`);
  return node;
}
