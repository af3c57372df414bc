"""One self-contained HTML page of a run, rendered from its JSON report (or several runs' reports).

The JSON report (``ci_files.report_document``) is the source: the page only draws what a report
holds, so ``--ortperf-html`` during a run and ``ortperf report JSON... --html PATH`` afterwards
give the same page, and the reports of a matrix of CI jobs merge into one page, each job named.

Layout, top to bottom: the counts and run errors; the summary table of every check, failures and
errors first (sortable, filterable); one section per check with its charts (failed ones open);
the profiled tests; the trade-off view per model. Charts are static SVG (``svg.py``): no
plotting library to inline, a few kilobytes per chart, nothing for a script to lay out on load.
"""

from pytest_ortperf.reports.html.jobs import Job, ReportFileError, read_report, read_reports
from pytest_ortperf.reports.html.page import render_page, write_page

__all__ = ["Job", "ReportFileError", "read_report", "read_reports", "render_page", "write_page"]
