() => {
  const typing = (t) => { const tag = (t && t.tagName || '').toLowerCase();
    return tag === 'textarea' || tag === 'input' || tag === 'select' || !!(t && t.isContentEditable); };
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (e.key === 'Enter' && !e.shiftKey && t && t.closest && t.closest('#src-text')) {
      setTimeout(() => t.blur(), 0); return;
    }
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || typing(t)) return;
    const b = document.getElementById(e.key === 'ArrowRight' ? 'next-step' : 'prev-step');
    if (!b || !b.checkVisibility()) return;
    b.click(); e.preventDefault();
  });
}
