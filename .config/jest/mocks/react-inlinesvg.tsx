// Grafana's Icon loads SVGs over the network through react-inlinesvg; tests render a stub.
import React from 'react';

type Props = { src: string } & React.HTMLAttributes<HTMLSpanElement>;

export default function InlineSVG({ src, ...rest }: Props) {
  return <span data-testid={`svg-${src.split('/').pop()}`} {...rest} />;
}
