'use strict';

/**
 * The point of a metric whose attributes include the given ones, from a snapshot's points.
 * @param {readonly { name: string, attributes: Record<string, string> }[]} points
 * @param {string} name canonical dotted name
 * @param {Record<string, string>} [attributes]
 */
function findPoint(points, name, attributes) {
  // Plain loops: this runs several times a sample over every point (one per kept hostname).
  const keys = attributes ? Object.keys(attributes) : [];
  for (let i = 0; i < points.length; i++) {
    const p = points[i];
    if (p.name !== name) continue;
    let j = 0;
    while (j < keys.length && p.attributes[keys[j]] === attributes[keys[j]]) j++;
    if (j === keys.length) return p;
  }
  return undefined;
}

module.exports = { findPoint };
