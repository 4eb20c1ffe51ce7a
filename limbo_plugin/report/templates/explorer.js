/* Limbo episode explorer: filter the episode index, open an episode, see why it duplicated.
 *
 * Data: window.LIMBO_INDEX (data/index.js) holds one compact row per episode; full records live
 * in data/episodes-NNNN.js chunks, loaded with a <script> tag when needed (fetch() is refused on
 * file:// URLs). Everything the records contain is inserted as text, never as HTML (elements are
 * made by assets/dom.js, which the page loads first).
 */
(function () {
  'use strict';
  var INDEX = window.LIMBO_INDEX;
  var el = window.LimboDom.el;  /* assets/dom.js, loaded before this file */
  var FIELDS = INDEX.fields;
  var COL = {};
  FIELDS.forEach(function (name, i) { COL[name] = i; });
  var FILTERS = ['agent', 'family', 'template', 'outcome', 'fault_mode', 'condition',
                 'contract', 'behaviour'];
  var PAGE = 100;
  var chunks = {};
  var waiting = {};
  var state = { filters: {}, q: '', page: 0, episode: null, pair: null };
  var matches = [];

  function value(row, name) {
    var v = row[COL[name]];
    var values = INDEX.values[name];
    return values ? values[v] : v;
  }


  function stable(v) {
    if (Array.isArray(v)) { return '[' + v.map(stable).join(',') + ']'; }
    if (v && typeof v === 'object') {
      return '{' + Object.keys(v).sort().map(function (k) {
        return JSON.stringify(k) + ':' + stable(v[k]);
      }).join(',') + '}';
    }
    return JSON.stringify(v);
  }

  function short(v, limit) {
    var text = typeof v === 'string' ? v : JSON.stringify(v);
    limit = limit || 160;
    return text.length > limit ? text.slice(0, limit - 1) + '…' : text;
  }

  function secs(t) { return 't=' + (Math.round(t * 10) / 10) + ' s'; }

  /* -- filters and list ------------------------------------------------------------------- */
  function natural(a, b) {
    // wait_60 before wait_3600: runs of digits compare as numbers.
    return String(a).localeCompare(String(b), 'en', { numeric: true });
  }

  var options = {};  // filter -> value -> its <option>, whose count follows the other filters

  function setupFilters() {
    var form = document.getElementById('filters');
    FILTERS.forEach(function (name) {
      var select = form.elements[name];
      var seen = {};
      INDEX.rows.forEach(function (row) { seen[value(row, name)] = true; });
      select.appendChild(el('option', { value: '', text: '(all)' }));
      options[name] = {};
      Object.keys(seen).sort(natural).forEach(function (v) {
        options[name][v] = select.appendChild(el('option', { value: v, text: v }));
      });
      select.addEventListener('change', function () {
        state.filters[name] = select.value;
        state.page = 0;
        clearError();
        writeHash();
        refresh();
      });
    });
    form.elements.q.addEventListener('input', function () {
      state.q = form.elements.q.value;
      state.page = 0;
      clearError();
      refresh();
    });
    form.addEventListener('submit', function (e) { e.preventDefault(); });
    document.getElementById('prev').addEventListener('click', function () {
      if (state.page > 0) { state.page -= 1; renderList(); }
    });
    document.getElementById('next').addEventListener('click', function () {
      if ((state.page + 1) * PAGE < matches.length) { state.page += 1; renderList(); }
    });
  }

  function refresh() {
    var wanted = [];
    FILTERS.forEach(function (name) {
      var v = state.filters[name];
      if (v) {
        var index = INDEX.values[name] ? INDEX.values[name].indexOf(v) : v;
        wanted.push([COL[name], index]);
      }
    });
    var q = state.q.toLowerCase();
    // One pass: a row that fails no filter is a match and counts for every filter's options;
    // a row that fails exactly one filter counts for that filter's options only (what the
    // list would show if that one filter changed).
    var counts = {};
    FILTERS.forEach(function (name) { counts[name] = {}; });
    matches = [];
    INDEX.rows.forEach(function (row) {
      if (q && row[COL.episode_id].toLowerCase().indexOf(q) < 0 &&
          row[COL.test_id].toLowerCase().indexOf(q) < 0) { return; }
      var failed = null;
      for (var i = 0; i < wanted.length; i++) {
        if (row[wanted[i][0]] !== wanted[i][1]) {
          if (failed !== null) { return; }
          failed = FIELDS[wanted[i][0]];
        }
      }
      if (failed === null) {
        matches.push(row);
        FILTERS.forEach(function (name) { bump(counts[name], value(row, name)); });
      } else {
        bump(counts[failed], value(row, failed));
      }
    });
    FILTERS.forEach(function (name) {
      Object.keys(options[name]).forEach(function (v) {
        var n = counts[name][v] || 0;
        options[name][v].textContent = v + ' (' + n + ')';
        options[name][v].classList.toggle('none', !n);
      });
    });
    renderList();
  }

  function bump(table, key) { table[key] = (table[key] || 0) + 1; }

  function renderList() {
    var body = document.querySelector('#episodes tbody');
    body.textContent = '';
    var start = state.page * PAGE;
    matches.slice(start, start + PAGE).forEach(function (row) {
      var uid = row[COL.uid];
      var outcome = value(row, 'outcome');
      var config = [value(row, 'agent'), value(row, 'contract'), value(row, 'condition')];
      var tr = el('tr', { 'data-uid': uid, 'data-outcome': outcome },
        el('td', { 'class': 'episode' }, el('div', { text: row[COL.test_id] }),
          el('div', { 'class': 'sub', text: config.join(' · ') })),
        el('td', null, el('span', { 'class': 'badge ' + outcome, text: outcome })),
        el('td', { 'class': 'num', text: String(row[COL.duplicates]) }));
      if (uid === state.episode) { tr.className = 'selected'; }
      tr.addEventListener('click', function () { openEpisode(uid, true); });
      body.appendChild(tr);
    });
    document.getElementById('count').textContent =
      matches.length + ' of ' + INDEX.rows.length + ' episodes';
    var pages = Math.max(1, Math.ceil(matches.length / PAGE));
    document.getElementById('page').textContent = 'page ' + (state.page + 1) + ' of ' + pages;
  }

  /* -- URL hash: #episode=<uid>&agent=…&family=… ------------------------------------------- */
  function readHash() {
    var params = new URLSearchParams(window.location.hash.replace(/^#/, ''));
    var form = document.getElementById('filters');
    FILTERS.forEach(function (name) {
      state.filters[name] = params.get(name) || '';
      form.elements[name].value = state.filters[name];
    });
    state.episode = params.get('episode');
    state.pair = params.get('pair');
    if (params.get('compare') && INDEX.values[params.get('compare')]) {
      compare.field = params.get('compare');
      compare.a = params.get('a') || '';
      compare.b = params.get('b') || '';
    }
  }

  function writeHash() {
    var params = new URLSearchParams();
    FILTERS.forEach(function (name) {
      if (state.filters[name]) { params.set(name, state.filters[name]); }
    });
    if (state.episode) { params.set('episode', state.episode); }
    if (state.pair) { params.set('pair', state.pair); }
    if (compare.field) {
      params.set('compare', compare.field);
      params.set('a', compare.a);
      params.set('b', compare.b);
    }
    var hash = params.toString();
    history.replaceState(null, '', hash ? '#' + hash : window.location.pathname);
  }

  /* -- loading a record ---------------------------------------------------------------------- */
  window.limboChunk = function (number, records) {
    chunks[number] = records;
    (waiting[number] || []).forEach(function (fn) { fn(records); });
    delete waiting[number];
  };

  function loadChunk(number, done) {
    if (chunks[number]) { done(chunks[number]); return; }
    if (waiting[number]) { waiting[number].push(done); return; }
    waiting[number] = [done];
    var script = document.createElement('script');
    script.src = 'data/episodes-' + String(number).padStart(4, '0') + '.js';
    script.onerror = function () {
      showError('Could not load ' + script.src + ': the data folder must stay beside index.html.');
    };
    document.body.appendChild(script);
  }

  function findEpisode(wanted) {
    // What a user pastes: the uid of a shared link, the id pytest prints (with or without its
    // "specs/experiments/x.yaml::" part), or an episode id that one configuration ran.
    var name = wanted.indexOf('::') >= 0 ? wanted.slice(wanted.lastIndexOf('::') + 2) : wanted;
    var found = INDEX.rows.find(function (r) { return r[COL.uid] === name; }) ||
      INDEX.rows.find(function (r) { return r[COL.test_id] === name; });
    if (found) { return found; }
    var same = INDEX.rows.filter(function (r) { return r[COL.episode_id] === name; });
    return same.length === 1 ? same[0] : null;
  }

  function openEpisode(wanted, remember) {
    var row = findEpisode(wanted);
    if (!row) {
      showError('No episode ' + wanted + ' in this report. Give the id pytest prints ' +
        '(e.g. ' + INDEX.rows[0][COL.test_id] + ') or pick one from the list.');
      reveal(document.getElementById('detail'));  // said where the reader lands
      return;
    }
    var uid = row[COL.uid];
    state.episode = uid;
    if (remember) { writeHash(); }
    Array.prototype.forEach.call(document.querySelectorAll('#episodes tbody tr'), function (tr) {
      tr.className = tr.getAttribute('data-uid') === uid ? 'selected' : '';
    });
    loadChunk(row[COL.chunk], function (records) {
      renderDetail(uid, records[uid]);
      var detail = document.getElementById('detail');
      var top = detail.getBoundingClientRect().top;
      // A link lands on the episode itself (on a phone it is below the list); a click in the
      // list scrolls only when the title would be under the sticky header or below the fold.
      if (!remember || top < headerHeight() || top > window.innerHeight * 0.6) {
        reveal(detail);
      }
    });
  }

  function reveal(node) {
    // Open any collapsed <details> around it, then bring it to the top of the window.
    for (var up = node.parentElement; up; up = up.parentElement) {
      if (up.tagName === 'DETAILS' && !up.open) { up.open = true; }
    }
    node.scrollIntoView();
  }

  function notice(message) {
    var box = document.getElementById('notice');
    if (!box) { return; }
    box.querySelector('span').textContent = message;
    box.hidden = false;
  }

  /* -- landing: every link opens where its target is -------------------------------------- */
  var PARAMS = FILTERS.concat(['q', 'episode', 'pair', 'compare', 'a', 'b']);

  function land() {
    var raw = window.location.hash.replace(/^#/, '');
    if (!raw) { return; }
    if (raw.indexOf('=') < 0) {
      var id = decodeURIComponent(raw);
      var target = document.getElementById(id);
      if (target) { reveal(target); return; }
      notice('No section "' + id + '" in this report; you are at its top. The results are ' +
        'here; "More results" lists every table and figure.');
      return;
    }
    var params = new URLSearchParams(raw);
    var unknown = [];
    params.forEach(function (v, k) { if (PARAMS.indexOf(k) < 0) { unknown.push(k); } });
    if (unknown.length) {
      notice('This link names ' + unknown.join(', ') + ', which the report does not know; ' +
        'it understands ' + PARAMS.join(', ') + '.');
    }
    var field = params.get('compare');
    if (field && !compare.field) {
      notice('No configuration field "' + field + '" to compare in these records' +
        (compareFields().length ? '; choose from ' + compareFields().join(', ') + '.' : '.'));
    }
    if (state.pair) { return; }  // openPair lands on the pair
    if (state.episode) { return; }  // openEpisode lands on the episode (or its error)
    if (compare.field) { reveal(document.getElementById('compare')); return; }
    var filtered = FILTERS.some(function (name) { return params.get(name); });
    if (filtered || params.get('q')) { reveal(document.getElementById('explorer')); }
  }

  /* -- two traces of one world side by side --------------------------------------------- */
  function openPair(pair) {
    var box = document.getElementById('pair');
    var uids = String(pair).split(',');
    var rows = uids.map(findEpisode);
    box.textContent = '';
    box.hidden = false;
    var close = el('button', { type: 'button', text: 'close' });
    close.addEventListener('click', function () {
      state.pair = null;
      box.hidden = true;
      box.textContent = '';
      writeHash();
    });
    if (uids.length !== 2 || !rows[0] || !rows[1]) {
      box.appendChild(el('div', { 'class': 'pair-bar' }, el('p', { 'class': 'empty error',
        text: 'No pair of episodes ' + pair + ' in this report: a side-by-side link names ' +
          'two episodes, "pair=<A>,<B>", as the comparison\'s links do.' }), close));
      box.setAttribute('data-error', 'true');
      reveal(box);
      return;
    }
    box.removeAttribute('data-error');
    box.appendChild(el('div', { 'class': 'pair-bar' },
      el('strong', { text: 'The same world, side by side: ' + rows[0][COL.episode_id] }), close));
    var sides = rows.map(function (row, i) {
      var side = el('div', { 'class': 'side', 'data-side': i ? 'B' : 'A',
                             'data-episode': row[COL.uid] });
      box.appendChild(side);
      return side;
    });
    var left = 2;
    rows.forEach(function (row, i) {
      loadChunk(row[COL.chunk], function (records) {
        renderEpisode(sides[i], row[COL.uid], records[row[COL.uid]], false);
        left -= 1;
        if (!left) { reveal(box); }
      });
    });
  }

  function headerHeight() {
    var header = document.querySelector('header.top');
    return header ? header.getBoundingClientRect().height : 0;
  }

  function showError(message) {
    var detail = document.getElementById('detail');
    detail.textContent = '';
    detail.removeAttribute('data-episode');
    detail.setAttribute('data-error', 'true');
    detail.appendChild(el('p', { 'class': 'empty error', text: message }));
  }

  function clearError() {
    // Navigating on (a filter, a search, another episode) takes an old error away.
    var detail = document.getElementById('detail');
    if (detail.getAttribute('data-error')) {
      detail.removeAttribute('data-error');
      detail.textContent = '';
      detail.appendChild(el('p', { 'class': 'empty', text: 'Select an episode.' }));
      if (state.episode && !findEpisode(state.episode)) { state.episode = null; writeHash(); }
    }
  }

  /* -- why it duplicated ------------------------------------------------------------------- */
  function attribute(record) {
    // Commits of the same tool and intent are executions of one operation: the first is the
    // original, every later create is a duplicate of it. Each commit is tied to the call it came
    // from: the agent's or harness's call covering its time, the timed-out call for a late
    // commit, the delivered call for a redelivery.
    var trace = record.trace || [];
    var groups = {};
    var info = {};
    (record.ledger || []).forEach(function (effect) {
      var key = effect.tool + ' ' + stable(effect.intent);
      var first = groups[key];
      var entry = { effect: effect, call: callFor(record, trace, effect), duplicateOf: null };
      if (first === undefined) {
        groups[key] = effect.seq;
      } else if (effect.kind !== 'update') {
        entry.duplicateOf = first;
      }
      info[effect.seq] = entry;
    });
    return info;
  }

  function callFor(record, trace, effect) {
    var same = trace.filter(function (c) { return c.tool === effect.tool; });
    if (effect.origin === 'late') {
      var fired = record.fault && record.fault.t_fired;
      return same.find(function (c) { return c.t_start === fired && c.is_error; }) ||
        last(same.filter(function (c) { return c.is_error && c.t_start <= effect.t; }));
    }
    if (effect.origin === 'redelivery') {
      return last(same.filter(function (c) { return c.t_start <= effect.t; }));
    }
    var origin = effect.origin === 'harness' ? 'harness' : 'agent';
    return last(same.filter(function (c) {
      return c.origin === origin && c.t_start <= effect.t && effect.t <= c.t_end;
    })) || last(same.filter(function (c) { return c.t_start <= effect.t; }));
  }

  function last(list) { return list.length ? list[list.length - 1] : undefined; }

  function describeCommit(entry) {
    var e = entry.effect;
    var call = entry.call ? 'call ' + entry.call.index : 'a call';
    if (e.origin === 'late') {
      return 'the in-flight request of ' + call + ' (timed out at ' +
        (entry.call ? secs(entry.call.t_start) : '?') + ') committed late, at ' + secs(e.t);
    }
    if (e.origin === 'redelivery') {
      return 'the transport delivered ' + call + ' a second time, at ' + secs(e.t);
    }
    if (e.origin === 'batch_resume') { return 'the interrupted batch resumed at ' + secs(e.t); }
    if (e.origin === 'harness') { return call + ' by the harness committed at ' + secs(e.t); }
    return call + ' by the agent committed at ' + secs(e.t);
  }

  function explain(record, info) {
    var lines = [];
    (record.effects || []).forEach(function (fx) {
      if (fx.committed > fx.required) {
        lines.push('Required effect "' + fx.id + '" was committed ' + fx.committed +
          '× (required ' + fx.required + ', still standing ' + fx.standing + ').');
      } else if (fx.standing < fx.required) {
        lines.push('Required effect "' + fx.id + '" is missing: ' + fx.standing + ' of ' +
          fx.required + ' standing.');
      }
    });
    Object.keys(info).forEach(function (seq) {
      var entry = info[seq];
      if (entry.duplicateOf === null) { return; }
      var original = info[entry.duplicateOf];
      lines.push('Commit #' + seq + ' (' + entry.effect.tool + ') duplicates commit #' +
        entry.duplicateOf + ': ' + describeCommit(original) + '; then ' +
        describeCommit(entry) + '.' + between(record, original, entry) +
        (entry.effect.undone_at != null ? ' It was undone at ' + secs(entry.effect.undone_at) +
          ', but a compensated duplicate still counts.' : ''));
    });
    if (record.overclaim) {
      lines.push('The agent finished "' + record.final_status + '" anyway' +
        ((record.uncertain_operations || []).length ? '.' :
          ', listing no operation as uncertain.'));
    }
    return lines;
  }

  function between(record, original, entry) {
    // What the agent did between the first execution and the duplicate: typically a wait and a
    // read-back that could not see an in-flight or lagging effect.
    var from = original.effect.origin === 'late' && original.call ? original.call.t_end
      : original.effect.t;
    var to = entry.call ? entry.call.t_start : entry.effect.t;
    var calls = (record.trace || []).filter(function (c) {
      return c.origin === 'agent' && c.t_start >= from && c.t_start < to &&
        (!entry.call || c.index !== entry.call.index);
    }).map(function (c) { return c.tool + ' (call ' + c.index + ', ' + secs(c.t_start) + ')'; });
    return calls.length ? ' In between, the agent called ' + calls.join(', ') + '.' : '';
  }

  /* -- the detail view ------------------------------------------------------------------------- */
  function badge(text, cls) { return el('span', { 'class': 'badge ' + (cls || ''), text: text }); }

  function yesNo(name, flag, good) {
    return badge(name + ' ' + (flag ? 'yes' : 'no'), flag === good ? 'yes' : 'no');
  }

  function renderDetail(uid, record) {
    var detail = document.getElementById('detail');
    detail.textContent = '';
    detail.removeAttribute('data-error');
    if (!record) { showError('Episode ' + uid + ' is missing from its data chunk.'); return; }
    detail.setAttribute('data-episode', uid);
    renderEpisode(detail, uid, record, true);
  }

  function renderEpisode(detail, uid, record, main) {
    // The opened episode (main: its parts carry ids links point at) or one side of a pair.
    if (!record) {
      detail.appendChild(el('p', { 'class': 'empty error',
        text: 'Episode ' + uid + ' is missing from its data chunk.' }));
      return;
    }
    var row = INDEX.rows.find(function (r) { return r[COL.uid] === uid; });
    var outcome = value(row, 'outcome');
    var info = attribute(record);
    detail.appendChild(el('h3', { text: record.episode_id }));
    detail.appendChild(el('p', { 'class': 'config', text: 'agent ' + record.agent +
      ' · contract ' + record.contract + ' · condition ' + record.condition + ' · docs ' +
      record.docs + ' · instruction ' + record.instruction + ' · operator ' + record.operator }));
    detail.appendChild(el('p', { 'class': 'fault', text: 'Fault ' + record.fault_mode + ' (' +
      record.family + ') on ' + (record.focal_tool || 'nothing') + (record.fired ? ', fired at ' +
      secs(record.fault.t_fired) : ', never fired') + (record.fault.delay_s ? '; in-flight delay ' +
      record.fault.delay_s + ' s' : '') }));
    detail.appendChild(el('p', { 'class': 'grade' },
      badge(outcome, outcome), yesNo('TS', record.ts, true), yesNo('EOS', record.eos, true),
      badge('duplicates ' + record.duplicates, record.duplicates ? 'duplicate' : 'yes'),
      yesNo('overclaim', record.overclaim, false),
      badge('behaviour ' + (record.behaviour || 'n/a')),
      badge('final ' + (record.final_status || 'none')),
      badge(record.tool_calls + ' calls, ' + Math.round(record.sim_seconds) + ' sim. s')));

    var lines = explain(record, info);
    if (lines.length) {
      var list = el('ul');
      lines.forEach(function (line) { list.appendChild(el('li', { text: line })); });
      detail.appendChild(el('div', main ? { 'class': 'why', id: 'why' } : { 'class': 'why' },
        el('h4', { text: record.duplicates ? 'Why it duplicated' : 'What went wrong' }), list));
    }
    var columns = el('div', { 'class': 'columns' });
    columns.appendChild(el('div', null, el('h4', { text: 'Timeline' }),
      timeline(record, info, main)));
    columns.appendChild(el('div', null, el('h4', { text: 'Ledger' }), ledger(record, info, main),
      el('h4', { text: 'Required effects' }), effects(record), finalReport(record)));
    detail.appendChild(columns);
  }

  function timeline(record, info, main) {
    var list = el('ol', main ? { 'class': 'timeline', id: 'timeline' } : { 'class': 'timeline' });
    var items = [];
    var byCall = {};
    Object.keys(info).forEach(function (seq) {
      var entry = info[seq];
      if (entry.call && (entry.effect.origin === 'agent' || entry.effect.origin === 'harness')) {
        (byCall[entry.call.index] = byCall[entry.call.index] || []).push(entry);
      } else {
        items.push({ t: entry.effect.t, order: 1, event: entry });
      }
    });
    (record.trace || []).forEach(function (call) {
      items.push({ t: call.t_start, order: 0, call: call });
    });
    items.sort(function (a, b) { return a.t - b.t || a.order - b.order; });
    var focalDone = false;
    items.forEach(function (item) {
      if (item.call) {
        var c = item.call;
        var focal = !focalDone && record.fired && c.tool === record.focal_tool &&
          c.t_start === record.fault.t_fired;
        if (focal) { focalDone = true; }
        var cls = (c.is_error ? 'error ' : '') + (c.origin === 'harness' ? 'harness ' : '') +
          (focal ? 'focal' : '');
        var li = el('li', { 'class': cls, 'data-call': String(c.index) },
          el('span', { 'class': 't', text: 'call ' + c.index + ' · ' + secs(c.t_start) + '–' +
            (Math.round(c.t_end * 10) / 10) }),
          el('span', { 'class': 'tool', text: c.tool }),
          c.origin === 'harness' ? badge('harness', 'harness') : null,
          focal ? badge('fault: ' + record.fault_mode, 'duplicate') : null,
          el('pre', { 'class': 'json', text: 'args ' + short(c.arguments, 400) }),
          el('pre', { 'class': 'json' + (c.is_error ? ' error' : ''),
            text: (c.is_error ? 'error ' : '→ ') + short(c.response, 400) }));
        (byCall[c.index] || []).forEach(function (entry) {
          li.appendChild(commitLine(entry));
        });
        list.appendChild(li);
      } else {
        var e = item.event.effect;
        list.appendChild(el('li', { 'class': 'event', 'data-origin': e.origin },
          el('span', { 'class': 't', text: secs(e.t) }),
          badge(e.origin, e.origin),
          el('span', { 'class': 'tool', text: e.tool }),
          el('div', { 'class': 'commit' + (item.event.duplicateOf ? ' dup' : ''),
            text: describeCommit(item.event) + ' → ' + (e.record_ids || []).join(', ') +
              (item.event.duplicateOf ? ' — DUPLICATE of commit #' + item.event.duplicateOf : '') })));
      }
    });
    return list;
  }

  function commitLine(entry) {
    var e = entry.effect;
    return el('div', { 'class': 'commit' + (entry.duplicateOf ? ' dup' : '') },
      'committed #' + e.seq + ' → ' + (e.record_ids || []).join(', ') +
      (entry.duplicateOf ? ' — DUPLICATE of commit #' + entry.duplicateOf : '') +
      (e.undone_at != null ? ' (undone at ' + secs(e.undone_at) + ')' : ''));
  }

  function ledger(record, info, main) {
    var body = el('tbody');
    (record.ledger || []).forEach(function (e) {
      var entry = info[e.seq];
      var status = entry.duplicateOf ? 'duplicate of #' + entry.duplicateOf : 'first';
      if (e.undone_at != null) { status += ', undone at ' + secs(e.undone_at); }
      var cls = (entry.duplicateOf ? 'dup ' : '') + (e.undone_at != null ? 'undone' : '');
      body.appendChild(el('tr', { 'class': cls, 'data-seq': String(e.seq),
                                  title: 'intent ' + short(e.intent, 400) },
        el('td', { 'class': 'seq' }, el('div', { text: '#' + e.seq }),
          el('div', { 'class': 'sub', text: (Math.round(e.t * 10) / 10) + ' s' })),
        el('td', { 'class': 'tool', text: e.tool }),
        el('td', { 'class': 'ids' }, ids(e.record_ids || []),
          el('div', { 'class': 'sub' }, badge(e.origin, e.origin),
            e.key ? 'key ' + e.key : null)),
        el('td', { 'class': 'status', text: status })));
    });
    if (!(record.ledger || []).length) {
      body.appendChild(el('tr', null, el('td', { colspan: '4', text: 'No effect committed.' })));
    }
    return el('table', main ? { 'class': 'ledger', id: 'ledger' } : { 'class': 'ledger' },
      el('thead', null, el('tr', null, el('th', { text: '# · t' }), el('th', { text: 'tool' }),
        el('th', { text: 'records · origin' }), el('th', { text: 'status' }))),
      body);
  }

  function ids(list) {
    // Each id whole (no break inside "tkt_000123"); the line may break between ids.
    var div = el('div');
    list.forEach(function (id, i) {
      if (i) { div.appendChild(document.createTextNode(', ')); }
      div.appendChild(el('span', { 'class': 'id', text: id }));
    });
    return div;
  }

  function effects(record) {
    var body = el('tbody');
    (record.effects || []).forEach(function (fx) {
      body.appendChild(el('tr', { 'class': fx.committed > fx.required ? 'dup' : '' },
        el('td', { text: fx.id }), el('td', { text: String(fx.required) }),
        el('td', { text: String(fx.committed) }), el('td', { text: String(fx.standing) })));
    });
    return el('table', { 'class': 'ledger' },
      el('thead', null, el('tr', null, el('th', { text: 'effect' }), el('th', { text: 'required' }),
        el('th', { text: 'committed' }), el('th', { text: 'standing' }))), body);
  }

  function finalReport(record) {
    var uncertain = record.uncertain_operations || [];
    return el('div', { 'class': 'final' }, el('h4', { text: 'Final report' }),
      el('p', { text: 'status: ' + (record.final_status || 'none (never called finish)') }),
      el('p', { text: 'summary: ' + (record.summary || '') }),
      el('p', { text: 'uncertain operations: ' + (uncertain.length ? uncertain.join('; ') : 'none listed') }));
  }

  /* -- comparison: where B duplicated and A did not ---------------------------------------- */
  var CONFIG = ['agent', 'contract', 'docs', 'instruction', 'condition', 'operator'];
  var SHOWN_PAIRS = 200;
  var compare = { field: '', a: '', b: '' };

  function mcnemar(b, c) {
    // Two-sided exact McNemar: twice the smaller binomial tail at p = 1/2 (as limbo compare).
    var n = b + c;
    if (n === 0 || b === c) { return 1; }
    var k = Math.min(b, c);
    var logTerm = -n * Math.LN2;  // log P(X = 0)
    var total = Math.exp(logTerm);
    for (var i = 1; i <= k; i++) {
      logTerm += Math.log((n - i + 1) / i);
      total += Math.exp(logTerm);
    }
    return Math.min(1, 2 * total);
  }

  function holm(ps) {
    // Holm-adjusted p-values in the input order (as limbo compare and the gate).
    var order = ps.map(function (p, i) { return i; }).sort(function (x, y) { return ps[x] - ps[y]; });
    var adjusted = ps.slice();
    var running = 0;
    order.forEach(function (i, rank) {
      running = Math.max(running, Math.min(1, (ps.length - rank) * ps[i]));
      adjusted[i] = running;
    });
    return adjusted;
  }

  function setupCompare() {
    var form = document.getElementById('compare-form');
    var fields = compareFields();
    if (!fields.length) {
      document.getElementById('compare-result').appendChild(el('p', { 'class': 'hint',
        text: 'These records hold one configuration: give limbo report the records of two ' +
          'runs (two agents, two conditions, …) to compare them here.' }));
      form.hidden = true;
      return;
    }
    fields.forEach(function (name) {
      form.elements.field.appendChild(el('option', { value: name, text: name }));
    });
    form.elements.field.addEventListener('change', function () {
      compare.field = form.elements.field.value;
      compare.a = compare.b = '';
      fillSides();
      renderCompare();
    });
    ['a', 'b'].forEach(function (side) {
      form.elements[side].addEventListener('change', function () {
        compare[side] = form.elements[side].value;
        renderCompare();
      });
    });
    document.getElementById('compare').addEventListener('toggle', function () {
      if (document.getElementById('compare').open && !compare.field) {
        compare.field = fields[0];
        fillSides();
        renderCompare();
      }
    });
  }

  function compareFields() {
    return CONFIG.filter(function (name) { return INDEX.values[name].length > 1; });
  }

  function fillSides() {
    var form = document.getElementById('compare-form');
    var values = INDEX.values[compare.field].slice().sort(natural);
    form.elements.field.value = compare.field;
    ['a', 'b'].forEach(function (side, i) {
      var select = form.elements[side];
      select.textContent = '';
      values.forEach(function (v) { select.appendChild(el('option', { value: v, text: v })); });
      if (values.indexOf(compare[side]) < 0) { compare[side] = values[Math.min(i, values.length - 1)]; }
      select.value = compare[side];
    });
  }

  function pairKey(row) {
    return [row[COL.episode_id]].concat(CONFIG.filter(function (name) {
      return name !== compare.field;
    }).map(function (name) { return value(row, name); })).join('|');
  }

  function renderCompare() {
    var out = document.getElementById('compare-result');
    out.textContent = '';
    writeHash();
    if (!compare.field || compare.a === compare.b) {
      if (compare.field) { out.appendChild(el('p', { 'class': 'hint', text: 'Pick two different values.' })); }
      return;
    }
    var sideA = {};
    INDEX.rows.forEach(function (row) {
      if (value(row, compare.field) === compare.a) { sideA[pairKey(row)] = row; }
    });
    var families = {};
    var order = [];
    var flips = [];
    INDEX.rows.forEach(function (row) {
      if (value(row, compare.field) !== compare.b) { return; }
      var other = sideA[pairKey(row)];
      if (!other) { return; }
      var family = value(row, 'family');
      if (!families[family]) { families[family] = { pairs: 0, bOnly: 0, aOnly: 0 }; order.push(family); }
      var f = families[family];
      var dupA = other[COL.duplicates] > 0;
      var dupB = row[COL.duplicates] > 0;
      f.pairs += 1;
      if (dupB && !dupA) { f.bOnly += 1; flips.push({ a: other, b: row, worse: true }); }
      if (dupA && !dupB) { f.aOnly += 1; flips.push({ a: other, b: row, worse: false }); }
    });
    if (!order.length) {
      out.appendChild(el('p', { 'class': 'hint', text: 'No world was run under both ' +
        compare.field + ' ' + compare.a + ' and ' + compare.b + ' (with the other settings equal).' }));
      return;
    }
    var rank = INDEX.familyOrder || [];
    order.sort(function (x, y) { return rank.indexOf(x) - rank.indexOf(y) || natural(x, y); });
    var body = el('tbody');
    var raw = order.map(function (family) {
      return mcnemar(families[family].bOnly, families[family].aOnly);
    });
    var adjusted = holm(raw);
    order.forEach(function (family, i) {
      var f = families[family];
      body.appendChild(el('tr', { 'data-family': family },
        el('td', { text: family }), el('td', { 'class': 'num', text: String(f.pairs) }),
        el('td', { 'class': 'num', text: String(f.bOnly) }),
        el('td', { 'class': 'num', text: String(f.aOnly) }),
        el('td', { 'class': 'num', text: raw[i].toPrecision(3) }),
        el('td', { 'class': 'num', text: adjusted[i].toPrecision(3) })));
    });
    out.appendChild(el('table', { 'class': 'comparison', id: 'comparison' },
      el('thead', null, el('tr', null, el('th', { text: 'family' }), el('th', { text: 'paired worlds' }),
        el('th', { text: 'B duplicated, A did not' }), el('th', { text: 'A duplicated, B did not' }),
        el('th', { text: 'exact McNemar p' }), el('th', { text: 'Holm p (across families)' }))), body));
    flips.sort(function (x, y) { return (y.worse - x.worse) || natural(x.b[COL.test_id], y.b[COL.test_id]); });
    var list = el('ul', { 'class': 'flips', id: 'flips' });
    flips.slice(0, SHOWN_PAIRS).forEach(function (flip) {
      var open = el('a', { href: '#', 'data-uid': flip.b[COL.uid], text: flip.b[COL.test_id] });
      open.addEventListener('click', function (event) {
        event.preventDefault();
        openEpisode(flip.b[COL.uid], true);
      });
      var counterpart = el('a', { href: '#', 'class': 'sub', text: 'A\'s episode' });
      counterpart.addEventListener('click', function (event) {
        event.preventDefault();
        openEpisode(flip.a[COL.uid], true);
      });
      var both = flip.a[COL.uid] + ',' + flip.b[COL.uid];
      var pair = el('a', { href: '#', 'class': 'side-by-side', 'data-pair': both,
                           text: 'side by side' });
      pair.addEventListener('click', function (event) {
        event.preventDefault();
        state.pair = both;
        writeHash();
        openPair(both);
      });
      list.appendChild(el('li', { 'data-worse': flip.worse ? 'true' : 'false' },
        badge(flip.worse ? 'B duplicated' : 'A duplicated', flip.worse ? 'duplicate' : 'passed'),
        open, ' · ', counterpart, ' · ', pair));
    });
    out.appendChild(el('p', { 'class': 'count', text: flips.length + ' world(s) where one ' +
      'duplicated and the other did not (A: ' + compare.field + ' ' + compare.a + ', B: ' +
      compare.b + ')' + (flips.length > SHOWN_PAIRS ? '; the first ' + SHOWN_PAIRS + ' listed' : '') }));
    out.appendChild(list);
  }

  /* -- start --------------------------------------------------------------------------------- */
  function start() {
    // Opened from limbo view's run list (served under /view/<run>/): a way back to it.
    if (/^\/view\/[^/]+\//.test(window.location.pathname)) {
      document.getElementById('all-runs').hidden = false;
    }
    setupFilters();
    setupCompare();
    readHash();
    refresh();
    if (compare.field) {
      document.getElementById('compare').open = true;
      fillSides();
      renderCompare();
    }
    if (state.episode) { openEpisode(state.episode, false); }
    if (state.pair) { openPair(state.pair); }
    land();
    document.querySelector('#notice button').addEventListener('click', function () {
      document.getElementById('notice').hidden = true;
    });
    document.addEventListener('keydown', function (event) {
      // j / k (or the arrow keys) step through the filtered episodes, as in a mail reader.
      var target = event.target && event.target.tagName;
      if (target === 'INPUT' || target === 'SELECT') { return; }
      var step = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[event.key];
      if (!step || !matches.length) { return; }
      event.preventDefault();
      var at = matches.findIndex(function (r) { return r[COL.uid] === state.episode; });
      var next = Math.max(0, Math.min(matches.length - 1, at < 0 ? 0 : at + step));
      state.page = Math.floor(next / PAGE);
      renderList();
      openEpisode(matches[next][COL.uid], true);
    });
    window.addEventListener('hashchange', function () {
      document.getElementById('notice').hidden = true;
      readHash();
      refresh();
      if (compare.field) {
        document.getElementById('compare').open = true;
        fillSides();
        renderCompare();
      }
      if (state.episode) { openEpisode(state.episode, false); }
      if (state.pair) { openPair(state.pair); }
      land();
    });
  }

  start();
}());
