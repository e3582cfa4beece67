// Grafana's Icon loads SVGs over the network through react-inlinesvg; tests render a stub.
import React from 'react';

type Props = { src: string; innerRef?: React.Ref<HTMLSpanElement> } & React.HTMLAttributes<HTMLSpanElement>;

export default function InlineSVG({ src, innerRef, ...rest }: Props) {
  return <span ref={innerRef} data-testid={`svg-${src.split('/').pop()}`} {...rest} />;
}
