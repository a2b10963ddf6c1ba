// A small status label (see `.ts-pill` in index.css): readable in both themes.

export type Tone = 'danger' | 'ok' | 'warn' | 'info' | 'neutral';

export function Pill({ tone = 'neutral', children, onClick }: { tone?: Tone; children: React.ReactNode; onClick?: () => void }) {
  return onClick ? (
    <button type="button" className={`ts-pill ts-pill-${tone}`} onClick={onClick} style={{ cursor: 'pointer', font: 'inherit', fontSize: 12 }}>
      {children}
    </button>
  ) : (
    <span className={`ts-pill ts-pill-${tone}`}>{children}</span>
  );
}
