/* DOM building shared by Limbo's pages (the report's episode explorer, `limbo view`'s run list):
 * LimboDom.el(tag, attrs, ...children) makes an element. An attribute named `text` sets its
 * text; children are nodes or strings (inserted as text, never as HTML); null and undefined
 * children are skipped. A plain script (no module): the report is opened from file:// too.
 */
(function () {
  'use strict';

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') { node.textContent = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) { continue; }
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  window.LimboDom = { el: el };
})();
