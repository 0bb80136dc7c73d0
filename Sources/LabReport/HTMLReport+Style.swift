/// The HTML report's one stylesheet: system fonts, cards on a light
/// background, the verdict in green or red, and the timeline's colours.
extension HTMLReport {
    static let style = """
        :root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --pass: #15803d; --fail: #b91c1c;
          --held: #2563eb; }
        * { box-sizing: border-box; }
        body { margin: 0; background: #f3f4f6; color: var(--ink);
          font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
        main { max-width: 1360px; margin: 0 auto; padding: 20px 24px 32px; }
        code, .hash, .details { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
        h1 { margin: 0 0 12px; font-size: 24px; }
        h1 .seed { color: var(--muted); font-weight: 400; font-size: 18px; margin-left: 8px; }
        h2 { margin: 0 0 10px; font-size: 16px; }
        header { margin-bottom: 16px; }
        .verdict { border-radius: 10px; padding: 12px 18px; color: #fff; margin-bottom: 12px; }
        .verdict.pass { background: var(--pass); }
        .verdict.fail { background: var(--fail); }
        .verdict p { margin: 0; }
        .verdict .headline { font-size: 26px; font-weight: 700; }
        .facts { display: grid; grid-template-columns: repeat(4, max-content); gap: 8px 40px; margin: 0 0 10px; }
        @media (max-width: 900px) { .facts { grid-template-columns: repeat(2, max-content); } }
        .facts dt { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
        .facts dd { margin: 0; font-weight: 600; }
        .replay { margin: 0; color: var(--muted); }
        .replay code { color: var(--ink); background: #fff; padding: 2px 6px; border-radius: 4px; }
        .card { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px;
          margin-bottom: 16px; }
        .scroll { overflow-x: auto; }
        .legend { list-style: none; display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 0 0 8px; padding: 0;
          color: var(--muted); font-size: 13px; }
        .legend li { display: flex; align-items: center; gap: 6px; }
        .swatch { width: 14px; height: 14px; border-radius: 3px; opacity: .45; }
        .key { display: inline-block; width: 18px; height: 14px; }
        .key.held { border-bottom: 2px solid var(--held); height: 8px; }
        .key.ack { width: 2px; height: 8px; background: var(--ink); margin: 0 8px; }
        .key.unack { width: 2px; height: 14px; background: var(--fail); margin: 0 8px; }
        .key.heal { width: 0; border-left: 2px dashed var(--muted); margin: 0 8px; }
        .key.converged { width: 0; border-left: 2px solid var(--pass); margin: 0 8px; }
        svg.timeline { display: block; font-size: 12px; }
        svg .lane-bg { fill: #fafafa; }
        svg .lane-bg.odd { fill: #f1f5f9; }
        svg .lane-label { font-weight: 600; fill: var(--ink); font-size: 13px; }
        svg .lane-label.small { font-size: 11px; }
        svg .lane-detail { fill: var(--muted); font-size: 11px; font-weight: 400; }
        svg .grid { stroke: #e2e8f0; stroke-width: 1; }
        svg .tick-label { fill: var(--muted); font-size: 11px; }
        svg .fault rect { fill-opacity: .28; }
        svg .fault:hover rect { fill-opacity: .5; }
        svg .held { fill: none; stroke: var(--held); stroke-width: 1.6; }
        svg .held-area { fill: var(--held); fill-opacity: .08; stroke: none; }
        svg .write { stroke-width: 1.2; }
        svg .write.ack { stroke: var(--ink); stroke-opacity: .7; }
        svg .write.unack { stroke: var(--fail); stroke-width: 1.6; }
        svg .marker line { stroke-width: 1.6; }
        svg .marker text { font-size: 12px; font-weight: 600; }
        svg .marker.heal line { stroke: var(--muted); stroke-dasharray: 5 4; }
        svg .marker.heal text { fill: var(--muted); }
        svg .marker.converged line { stroke: var(--pass); }
        svg .marker.converged text { fill: var(--pass); }
        svg .node-converged { fill: var(--pass); stroke: #fff; stroke-width: 1; }
        svg .node-never { fill: var(--fail); font-size: 11px; font-weight: 600; }
        table.nodes { border-collapse: collapse; width: 100%; }
        .nodes th, .nodes td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left;
          white-space: nowrap; }
        .nodes thead th { color: var(--muted); font-weight: 600; font-size: 12px; }
        .nodes .num { text-align: right; font-variant-numeric: tabular-nums; }
        .nodes .odd-one, .nodes .never { color: var(--fail); font-weight: 700; }
        .checks { list-style: none; margin: 0; padding: 0; }
        .checks > li { padding: 4px 0; }
        .checks .mark { font-weight: 700; }
        .checks .pass .mark { color: var(--pass); }
        .checks .fail .mark, .checks .fail { color: var(--fail); }
        .details { margin: 4px 0 4px 24px; padding: 8px 12px; background: #fef2f2; border-radius: 6px;
          list-style: none; color: var(--ink); font-size: 13px; }
        .verdict-line { margin: 10px 0 0; font-weight: 700; }
        .verdict-line.pass { color: var(--pass); }
        .verdict-line.fail { color: var(--fail); }
        footer { color: var(--muted); font-size: 12px; }

        """
}
