// Extends create-plugin's setup in .config/ with the browser APIs that jsdom lacks and that
// Grafana UI components and CodeMirror touch on render.
import './.config/jest-setup';

class NoopObserver {
  observe() {}
  unobserve() {}
  disconnect() {}
  takeRecords() {
    return [];
  }
}
global.ResizeObserver = global.ResizeObserver || NoopObserver;
global.IntersectionObserver = global.IntersectionObserver || NoopObserver;
global.MutationObserver = global.MutationObserver || NoopObserver;

// CodeMirror measures text with Range rectangles, which jsdom does not implement.
if (typeof document !== 'undefined' && document.createRange) {
  const emptyRect = { x: 0, y: 0, top: 0, left: 0, bottom: 0, right: 0, width: 0, height: 0, toJSON: () => ({}) };
  Range.prototype.getBoundingClientRect = () => emptyRect;
  Range.prototype.getClientRects = () => ({ item: () => null, length: 0, [Symbol.iterator]: [][Symbol.iterator] });
}

// Grafana's Combobox sizes its menu and pills by measuring text on a canvas (the base setup's
// getContext returns nothing), on every render: a canvas that measures 8 px a character. The
// box sizes its list needs are set only by the suites that open lists (withComboboxLayout in
// src/components/testing.tsx).
HTMLCanvasElement.prototype.getContext = () => ({ font: '', measureText: (text) => ({ width: text.length * 8 }) });
