"""The HTML report's stylesheet and script, inlined into every page: the page fetches nothing.

The script only sorts and filters the summary table and opens a check when its row is followed;
every chart is static SVG (``svg.py``), so the page reads the same with scripts off.
"""

from __future__ import annotations

STYLE = """
:root{--bg:#fff;--fg:#1d2330;--mute:#5d6778;--line:#d8dde6;--s0:#7a8aa6;--s1:#1f6fd1;--bad:#c62828;
--ok:#2e7d32;--warn:#b26a00;--band:#e3f1e4;--card:#f7f8fb}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{padding:14px 22px 8px;border-bottom:1px solid var(--line)}
header h1{font-size:19px;margin:0 0 4px}
main{padding:0 22px 40px;max-width:1500px}
h2{font-size:16px;margin:22px 0 8px}
h3{font-size:14px;margin:14px 0 6px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{white-space:pre-wrap;background:var(--card);border:1px solid var(--line);padding:8px 10px;
border-radius:4px;margin:6px 0;max-height:22em;overflow:auto}
.muted{color:var(--mute)}
.banner{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.pill{padding:6px 12px;border-radius:16px;background:var(--card);border:1px solid var(--line)}
.pill.bad{background:#fdecea;border-color:#f3b7b2;color:var(--bad);font-weight:600}
.pill.ok{background:#eaf5eb;border-color:#b7dbb9;color:var(--ok);font-weight:600}
.runerr{color:var(--bad);font-weight:600}
table{border-collapse:collapse;width:100%;margin:4px 0 10px}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top}
#checks-table{table-layout:fixed}
#checks-table td,#checks-table th{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
#checks-table td:first-child,#checks-table th:first-child{padding:3px 2px;text-overflow:clip}
th{background:var(--card);position:sticky;top:0;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
#checks-table td.c{text-align:left}
#checks-table td.t{text-overflow:clip}#checks-table td.t a{display:flex;min-width:0}
#checks-table td.t .tp{flex:0 1 auto;min-width:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
direction:rtl}
#checks-table td.t .tp bdi{direction:ltr;unicode-bidi:isolate}
#checks-table td.t .tn{flex:0 0 auto;max-width:100%;white-space:normal;overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.failed td{background:#fff3f2}tr.error td{background:#fff3f2}
.v-failed,.v-error{color:var(--bad);font-weight:600}.v-warn{color:var(--warn)}.v-ok{color:var(--ok)}
#filter{margin:4px 0 6px;padding:4px 8px;width:22em;max-width:100%;border:1px solid var(--line);
border-radius:4px}
details.check{border:1px solid var(--line);border-radius:6px;margin:8px 0;background:#fff;
content-visibility:auto;contain-intrinsic-size:auto 40px}
details.check>summary{padding:6px 10px;cursor:pointer;background:var(--card);border-radius:6px}
details.check[open]>summary{border-bottom:1px solid var(--line);border-radius:6px 6px 0 0}
details.check.failed,details.check.error{border-color:#f3b7b2}
details.check.failed>summary,details.check.error>summary{background:#fdecea}
.body{padding:8px 12px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:4px 0 8px}
.facts dt{color:var(--mute)}.facts dd{margin:0}
.charts{display:flex;flex-wrap:wrap;gap:10px 22px;align-items:flex-start}
.charts figure{margin:0}.charts figcaption{font-size:12px;color:var(--mute);max-width:440px}
svg.chart{display:block;font:11px system-ui,sans-serif;overflow:visible}
svg .ax{stroke:#9aa3b2;fill:none}svg .tk{fill:var(--mute)}svg .lb{fill:var(--fg)}
svg .s0{fill:var(--s0);stroke:var(--s0)}svg .s1{fill:var(--s1);stroke:var(--s1)}
svg .band{fill:var(--band);stroke:none}svg .bad{fill:var(--bad);stroke:var(--bad)}
svg .ok{fill:var(--ok);stroke:var(--ok)}svg .iv{stroke-width:5}svg .pt{fill:var(--fg);stroke:#fff}
svg .mk{stroke:var(--warn);fill:var(--warn);stroke-dasharray:4 3}
svg text{stroke:none}
.tag{display:inline-block;padding:0 6px;border-radius:3px;background:var(--card);
border:1px solid var(--line);font-size:12px;margin-right:4px}
.lost{color:var(--bad)}.gained{color:var(--ok)}
nav.toc a{margin-right:14px}
"""

SCRIPT = """
(function(){
var table=document.getElementById('checks-table');
if(table){
  var body=table.tBodies[0];
  function key(cell){var v=cell.getAttribute('data-v');return v===null?cell.textContent.trim():v;}
  Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,column){
    th.addEventListener('click',function(){
      var ascending=th.getAttribute('aria-sort')!=='ascending';
      Array.prototype.forEach.call(table.tHead.rows[0].cells,function(c){c.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',ascending?'ascending':'descending');
      var rows=Array.prototype.slice.call(body.rows);
      var numeric=th.hasAttribute('data-num');
      rows.sort(function(a,b){
        var x=key(a.cells[column]),y=key(b.cells[column]);
        var order=numeric?(parseFloat(x)||0)-(parseFloat(y)||0):x.localeCompare(y);
        return ascending?order:-order;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
  var filter=document.getElementById('filter');
  if(filter){filter.addEventListener('input',function(){
    var words=filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    Array.prototype.forEach.call(body.rows,function(r){
      var text=r.textContent.toLowerCase();
      r.hidden=!words.every(function(w){return text.indexOf(w)>=0;});
    });
  });}
}
function reveal(){
  var target=location.hash&&document.getElementById(location.hash.slice(1));
  if(target&&target.tagName==='DETAILS'){target.open=true;}
}
window.addEventListener('hashchange',reveal);reveal();
})();
"""
