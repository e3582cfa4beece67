import React, { ReactElement, useId } from 'react';

/**
 * Gives a control an accessible name of its own: Grafana's Combobox takes no aria-label, only
 * aria-labelledby, and several of ours sit beside another control under one field label.
 * Screen readers, the jest tests and the browser tests find the control by this name.
 */
export function Named({ name, children }: { name: string; children: (labelId: string) => ReactElement }) {
  const id = useId();
  return (
    <>
      <span id={id} hidden>
        {name}
      </span>
      {children(id)}
    </>
  );
}
