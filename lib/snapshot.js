'use strict';

/**
 * The point of a metric whose attributes include the given ones, from a snapshot's points.
 * @param {readonly { name: string, attributes: Record<string, string> }[]} points
 * @param {string} name canonical dotted name
 * @param {Record<string, string>} [attributes]
 */
function findPoint(points, name, attributes = {}) {
  return points.find((p) => p.name === name && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
}

module.exports = { findPoint };
