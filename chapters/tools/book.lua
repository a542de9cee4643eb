-- book.lua: pandoc Lua filter for the woven book (HTML and LaTeX/PDF).
--
-- Reads the Markdown written by noweb2md.py:
--   ::: {.nw-file prefix="2" kind="chapter"} :::   marks the start of each .nw file
--   :::: {#chunk-2-7 .chunk label="2.7"}          one code chunk, holding
--     ::: chunk-title  [2.7]{.chunk-label} [<name>=]{.chunk-name}
--     a code block, references to chunks written "<name 2.3>"
--     ::: chunk-xref   continued in / uses / used in / defines
--   ::: {.receipt-table}                          a table from a program's receipts
--   ``` {.receipt}                                a program's text receipt
--   ::: {.nw-index ...}                           the two indexes
--   ::: {.sidebar}                                a boxed aside (LaTeX: nwsidebar)
--
-- Both: chunk references inside code become links (#chunk-2-3); receipt
--       tables get natural column widths; an image without extension must
--       exist as fig/NAME.svg (HTML) or fig/NAME.pdf (LaTeX) on the resource
--       path, else the weave fails with a clear message.
-- HTML: numbers chapter headings ("2", "A") from the file markers and drops
--       the markers; everything else is left to book.css.
-- LaTeX: turns the markers into chapter numbering switches, the chunks into
--       \nwchunktitle / nwxref (defined in latex-header.tex), receipts into
--       small breakable Verbatim, wide tables into smaller type, the
--       identifier index into two columns.
-- Volumes (LaTeX only; metadata nwvolume=reader, nwother=PROGRAM.aux,
--       nwotherpdf=FILE.pdf): the reader's book leaves out every "## The
--       program" and "## The tests" section, every section whose heading
--       has the class .complete (down to the next heading of its level or
--       above), every ::: {.complete} div and the indexes.  A link to
--       something left out names the other volume and its page there (read
--       from that volume's .aux): "(Program, p. 412)".  Without nwvolume the
--       whole book is woven: the complete program.

local is_latex = FORMAT:match('latex') ~= nil or FORMAT:match('beamer') ~= nil
local is_html = FORMAT:match('html') ~= nil

local function has_class(el, c)
  for _, x in ipairs(el.classes) do
    if x == c then return true end
  end
  return false
end

local function attr(el, key)
  return el.attributes[key]
end

-- ------------------------------------------------------------------ images

local function file_exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() return true end
  return false
end

local missing_images = {}

local function check_image(img)
  local src = img.src
  if src:match('^%a+://') or src:match('^data:') then return nil end
  local ext = is_latex and 'pdf' or 'svg'
  local candidates = { src }
  if not src:match('%.[%w]+$') then candidates = { src .. '.' .. ext } end
  local dirs = PANDOC_STATE.resource_path or { '.' }
  for _, c in ipairs(candidates) do
    if c:sub(1, 1) == '/' then
      if file_exists(c) then return nil end
    else
      for _, d in ipairs(dirs) do
        if file_exists(d .. '/' .. c) then return nil end
      end
    end
  end
  table.insert(missing_images, candidates[1])
  return nil
end

-- ------------------------------------------------------------------ chunk references in code
--
-- noweb2md writes a reference to another chunk inside code as the text
-- "⟨name 2.3⟩".  Here each becomes a link to #chunk-2-3: the code is
-- highlighted with a placeholder word in place of each reference, and the
-- placeholder is then replaced in the highlighted HTML or LaTeX.

local function html_escape(s)
  return (s:gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;'):gsub('"', '&quot;'))
end

local function verb_escape(s)   -- inside fancyvrb with commandchars=\\\{\}
  return (s:gsub('[\\{}]', function(c)
    if c == '\\' then return '\\textbackslash{}' end
    return '\\' .. c
  end))
end

local function anchor_of(label)
  return 'chunk-' .. label:gsub('%.', '-')
end

-- ------------------------------------------------------------------ volumes
--
-- The reader's volume (see the header): what it leaves out, the ids that
-- stay, and the pages of the other volume.

local volume = { reader = false, present = nil, pages = {}, pdf = '' }

local function is_absent(id)
  return volume.reader and volume.present ~= nil and not volume.present[id]
end

local function complete_only(b)
  if b.t ~= 'Header' then return false end
  if has_class(b, 'complete') then return true end
  if b.level == 2 then
    local t = pandoc.utils.stringify(b.content)
    return t == 'The program' or t == 'The tests'
  end
  return false
end

local function reader_blocks(blocks)
  local out, skip = {}, nil
  for _, b in ipairs(blocks) do
    if b.t == 'Div' and has_class(b, 'nw-file') then
      skip = nil
    elseif skip and b.t == 'Header' and b.level <= skip then
      skip = nil
    end
    if not skip and complete_only(b) then skip = b.level end
    if not skip and not (b.t == 'Div' and has_class(b, 'complete')) then
      table.insert(out, b)
    end
  end
  return out
end

local function read_other_pages(path)
  local f = io.open(path, 'r')
  if not f then
    io.stderr:write('book.lua: warning: ' .. path .. ' not found: no pages for the other volume\n')
    return {}
  end
  local pages = {}
  for line in f:lines() do
    local id, page = line:match('^\\newlabel{([^}]*)}{{[^{}]*}{([^{}]*)}')
    if id then pages[id] = page end
  end
  f:close()
  return pages
end

local function collect_ids(doc)
  local ids = {}
  local function add(el)
    if el.identifier and el.identifier ~= '' then ids[el.identifier] = true end
  end
  doc:walk({ Header = add, Div = add, Span = add, Image = add, Code = add,
             CodeBlock = add, Link = add, Table = add })
  return ids
end

-- "Program, p. 412" (linked to the other PDF) for an id left out of this volume.
local function other_ref(id)
  local page = volume.pages[id]
  local where = page and ('p.\\nobreakspace ' .. page) or 'the complete program'
  if volume.pdf ~= '' and page then
    where = '\\href{' .. volume.pdf .. '\\#' .. id .. '}{' .. where .. '}'
  end
  return '\\emph{Program},\\nobreakspace ' .. where
end

-- A link to an id this volume leaves out (see Pandoc below for WHERE).
local function absent_link(l, where)
  local t = l.target:match('^#(.+)$')
  if not t or not is_absent(t) then return nil end
  if #l.content == 1 and l.content[1].t == 'Code' then return l.content end
  local out = {}
  for _, x in ipairs(l.content) do table.insert(out, x) end
  if where == 'margin' then
    table.insert(out, pandoc.RawInline('latex', '\\nwprogref{' .. other_ref(t) .. '}'))
  elseif where == 'xref' then
    table.insert(out, pandoc.Space())
    table.insert(out, pandoc.RawInline('latex', other_ref(t)))
  else
    table.insert(out, pandoc.Space())
    table.insert(out, pandoc.RawInline('latex', '(' .. other_ref(t) .. ')'))
  end
  return out
end

-- A chunk's cross references (LaTeX) as one compact paragraph: the
-- sentences noweb2md writes on lines of their own run on, a little apart.
-- In the reader's volume "Uses identifiers" keeps only the names whose
-- definition it prints, and "Defines" only the names (the complete volume
-- says where each is used).
local function xref_items(span, keep)
  local items = {}
  for _, x in ipairs(span.content) do
    if x.t == 'Span' and has_class(x, 'xr-item') and keep(x) then
      table.insert(items, x)
    end
  end
  return items
end

local function xref_sentence(span)
  local head, items
  if has_class(span, 'xr-idents') then
    head = { pandoc.Str('Uses'), pandoc.Space(), pandoc.Str('identifiers') }
    items = xref_items(span, function(it)
      local here = false
      pandoc.walk_inline(it, { Link = function(l)
        local t = l.target:match('^#(.+)$')
        if t and not is_absent(t) then here = true end
      end })
      return here or not volume.reader
    end)
  elseif has_class(span, 'xr-defines') then
    head = { pandoc.Str('Defines') }
    items = xref_items(span, function() return true end)
    if volume.reader then
      for i, it in ipairs(items) do
        local kept = {}
        for _, x in ipairs(it.content) do
          if not (x.t == 'Span' and has_class(x, 'xr-usedin')) then table.insert(kept, x) end
        end
        while #kept > 0 and (kept[#kept].t == 'Space' or kept[#kept].t == 'SoftBreak') do
          table.remove(kept)
        end
        it.content = kept
        items[i] = it
      end
    end
  else
    return nil
  end
  if #items == 0 then return {} end
  local out = head
  for i, it in ipairs(items) do
    table.insert(out, i == 1 and pandoc.Space() or pandoc.Str(','))
    if i > 1 then table.insert(out, pandoc.Space()) end
    table.insert(out, it)
  end
  table.insert(out, pandoc.Str('.'))
  return out
end

local function compact_xref(div)
  local blocks = {}
  for _, b in ipairs(div.content) do
    if b.t == 'Para' or b.t == 'Plain' then
      local sentences, cur = {}, {}
      for _, x in ipairs(b.content) do
        if x.t == 'LineBreak' then
          table.insert(sentences, cur)
          cur = {}
        elseif x.t == 'Span' and (has_class(x, 'xr-idents') or has_class(x, 'xr-defines')) then
          for _, y in ipairs(xref_sentence(x)) do table.insert(cur, y) end
        elseif not ((x.t == 'SoftBreak' or x.t == 'Space') and #cur == 0) then
          table.insert(cur, x)
        end
      end
      table.insert(sentences, cur)
      local out = {}
      for _, sen in ipairs(sentences) do
        if #sen > 0 then
          if #out > 0 then
            table.insert(out, pandoc.Space())
            table.insert(out, pandoc.RawInline('latex', '\\hspace{0.7em}'))
          end
          for _, y in ipairs(sen) do table.insert(out, y) end
        end
      end
      if #out > 0 then table.insert(blocks, pandoc.Plain(out)) end
    else
      table.insert(blocks, b)
    end
  end
  div.content = blocks
  return div
end

-- noweb2md marks an identifier defined in another chunk as
-- U+E000 name U+E001 anchor U+E002; it becomes a link to that chunk.
local ID_OPEN, ID_MID, ID_CLOSE = '\u{E000}', '\u{E001}', '\u{E002}'

local function strip_ident_marks(text)
  return (text:gsub(ID_OPEN .. '(.-)' .. ID_MID .. '.-' .. ID_CLOSE, '%1'))
end

local function link_refs(cb, anchor)
  local text = cb.text
  local refs, out, pos = {}, {}, 1
  local function placeholder(r)
    r.key = 'NWREF' .. tostring(#refs) .. 'X'
    table.insert(refs, r)
    table.insert(out, r.key)
  end
  while true do
    local s, e = text:find('\u{27E8}', pos, true)
    local is, ie = text:find(ID_OPEN, pos, true)
    if is and (not s or is < s) then
      local ms, me = text:find(ID_MID, ie + 1, true)
      local cs, ce = text:find(ID_CLOSE, (me or ie) + 1, true)
      if not ms or not cs then break end
      table.insert(out, text:sub(pos, is - 1))
      placeholder({ ident = text:sub(ie + 1, ms - 1), target = text:sub(me + 1, cs - 1) })
      pos = ce + 1
    elseif s then
      local s2, e2 = text:find('\u{27E9}', e + 1, true)
      if not s2 then break end
      local inner = strip_ident_marks(text:sub(e + 1, s2 - 1))
      local name, label = inner:match('^(.*) ([%w_%-]+%.%d+)$')
      if name and not inner:find('\n', 1, true) then
        table.insert(out, text:sub(pos, s - 1))
        placeholder({ name = name, label = label })
        pos = e2 + 1
      else
        table.insert(out, text:sub(pos, e))
        pos = e + 1
      end
    else
      break
    end
  end
  if #refs == 0 then return nil end
  table.insert(out, text:sub(pos))
  local plain = pandoc.CodeBlock(strip_ident_marks(text), cb.attr)
  if not pandoc.write or not PANDOC_WRITER_OPTIONS then return plain end
  local cb2 = pandoc.CodeBlock(table.concat(out), cb.attr)
  -- a fragment (no template), highlighted in the style given to pandoc
  local opts = { highlight_style = PANDOC_WRITER_OPTIONS.highlight_style }
  local ok, raw = pcall(pandoc.write, pandoc.Pandoc({ cb2 }), FORMAT, opts)
  if not ok then return plain end
  -- unhighlighted LaTeX is verbatim: no links possible there
  if is_latex and not raw:find('\\begin{Highlighting}', 1, true) then return plain end
  for _, r in ipairs(refs) do
    local rep
    if r.ident and is_absent(r.target) then
      rep = is_latex and verb_escape(r.ident) or html_escape(r.ident)
    elseif r.label and is_absent(anchor_of(r.label)) then
      rep = '\u{27E8}' .. (is_latex and verb_escape(r.name) or html_escape(r.name))
        .. ' ' .. r.label .. '\u{27E9}'
    elseif r.ident and is_latex then
      rep = '\\hyperlink{' .. r.target .. '}{' .. verb_escape(r.ident) .. '}'
    elseif r.ident then
      rep = '<a class="ident" href="#' .. r.target .. '">' .. html_escape(r.ident) .. '</a>'
    elseif is_latex then
      rep = '\\hyperlink{' .. anchor_of(r.label) .. '}{\u{27E8}' .. verb_escape(r.name)
        .. ' ' .. r.label .. '\u{27E9}}'
    else
      rep = '<a class="chunk-ref" href="#' .. anchor_of(r.label) .. '">\u{27E8}'
        .. html_escape(r.name) .. ' <span class="chunk-ref-label">' .. r.label
        .. '</span>\u{27E9}</a>'
    end
    raw = raw:gsub(r.key, function() return rep end)
  end
  if is_html and anchor ~= '' then
    -- each pandoc.write numbers its blocks cb1, cb2...: make the ids unique
    raw = raw:gsub('id="cb1"', 'id="' .. anchor .. '-code"')
    raw = raw:gsub('"cb1%-', '"' .. anchor .. '-L')
    raw = raw:gsub('"#cb1%-', '"#' .. anchor .. '-L')
  end
  return pandoc.RawBlock(is_latex and 'latex' or 'html', raw)
end

-- ------------------------------------------------------------------ LaTeX

local function latex_chunk(div)
  local out = {}
  local id = div.identifier
  for _, b in ipairs(div.content) do
    if b.t == 'Div' and has_class(b, 'chunk-title') then
      local label, name = attr(div, 'label') or '', {}
      pandoc.walk_block(b, {
        Span = function(s)
          if has_class(s, 'chunk-name') then name = s.content end
          if has_class(s, 'chunk-label') then label = pandoc.utils.stringify(s) end
        end })
      local inl = { pandoc.RawInline('latex', '\\nwchunktitle{' .. id .. '}{' .. label .. '}{') }
      for _, x in ipairs(name) do table.insert(inl, x) end
      table.insert(inl, pandoc.RawInline('latex', '}'))
      table.insert(out, pandoc.Plain(inl))
    elseif b.t == 'Div' and has_class(b, 'chunk-xref') then
      table.insert(out, pandoc.RawBlock('latex', '\\begin{nwxref}'))
      for _, x in ipairs(b.content) do table.insert(out, x) end
      table.insert(out, pandoc.RawBlock('latex', '\\end{nwxref}'))
    elseif b.t == 'CodeBlock' then
      table.insert(out, link_refs(b, id) or b)
    else
      table.insert(out, b)
    end
  end
  table.insert(out, 1, pandoc.RawBlock('latex', '\\begin{nwchunk}'))
  table.insert(out, pandoc.RawBlock('latex', '\\end{nwchunk}'))
  return out
end

local function latex_receipt(cb)
  local text = cb.text
  if text:find('\\end{Verbatim}', 1, true) then return nil end
  return pandoc.RawBlock('latex',
    '\\begin{Verbatim}[fontsize=\\small,breaklines,breakanywhere,frame=leftline,framerule=0.8pt,rulecolor=\\color{nwrule},xleftmargin=0.5em]\n'
    .. text .. '\n\\end{Verbatim}')
end

-- A receipt table too wide for the page at \small: stack multi-word headers
-- on two lines, then pick the font size and column gap that fit.  Widths
-- are estimated in characters of DejaVu Serif (about 88 fit the text width
-- at \small, 100 at \footnotesize, 115 at \scriptsize).
local function latex_escape(s)
  return (s:gsub('[\\{}$&#^_%%~]', function(c)
    if c == '\\' then return '\\textbackslash{}' end
    if c == '^' then return '\\textasciicircum{}' end
    if c == '~' then return '\\textasciitilde{}' end
    return '\\' .. c
  end))
end

local function split_two(text)
  local words = {}
  for w in text:gmatch('%S+') do table.insert(words, w) end
  if #words < 2 then return nil end
  local best, bi = math.huge, 1
  for i = 1, #words - 1 do
    local a = utf8.len(table.concat(words, ' ', 1, i)) or 0
    local b = utf8.len(table.concat(words, ' ', i + 1, #words)) or 0
    if math.max(a, b) < best then best, bi = math.max(a, b), i end
  end
  return table.concat(words, ' ', 1, bi), table.concat(words, ' ', bi + 1, #words)
end

-- A cell's width in characters; a stacked heading is as wide as its longer line.
local function cell_width(cell, stacked)
  local text = pandoc.utils.stringify(cell.contents)
  local n = utf8.len(text) or #text
  if stacked then
    local a, b = split_two(text)
    if a then n = math.max(utf8.len(a) or #a, utf8.len(b) or #b) end
  end
  return n
end

local function latex_fit_table(t)
  local ncols = #t.colspecs
  local function widths(stacked)   -- stacked: headings on two lines
    local w = {}
    for j = 1, ncols do w[j] = 1 end
    local function widen(rows, stack)
      for _, row in ipairs(rows) do
        for j, cell in ipairs(row.cells) do
          local n = cell_width(cell, stack)
          if j <= ncols and n > w[j] then w[j] = n end
        end
      end
    end
    widen(t.head.rows, stacked)
    for _, tb in ipairs(t.bodies) do widen(tb.body, false) end
    local total = 0
    for j = 1, ncols do total = total + w[j] + 2 end
    return total, w
  end
  local total = widths(false)
  if total <= 88 then return t, '\\small' end
  local stacked, sw = widths(true)
  for _, row in ipairs(t.head.rows) do
    for j, cell in ipairs(row.cells) do
      local text = pandoc.utils.stringify(cell.contents)
      local a, b = split_two(text)
      if a then
        local al = t.colspecs[j] and t.colspecs[j][1] or 'AlignDefault'
        local c = (al == 'AlignRight' and 'r') or (al == 'AlignCenter' and 'c') or 'l'
        cell.contents = { pandoc.Plain({ pandoc.RawInline('latex',
          '\\begin{tabular}[b]{@{}' .. c .. '@{}}' .. latex_escape(a) .. '\\\\'
          .. latex_escape(b) .. '\\end{tabular}') }) }
      end
    end
  end
  if stacked <= 88 then return t, '\\small' end
  if stacked <= 100 then return t, '\\footnotesize' end
  local tiny = '\\scriptsize\\setlength{\\tabcolsep}{4pt}'
  if stacked <= 106 then return t, tiny end
  -- Still too wide: let the widest text (not right-aligned) column wrap.
  -- pandoc gives column j the width (\linewidth - 2n\tabcolsep) * frac[j];
  -- a \scriptsize DejaVu Serif character is about 4.3pt, the page 443pt.
  local wrap, widest = nil, 0
  for j = 1, ncols do
    if t.colspecs[j][1] ~= 'AlignRight' and sw[j] > widest then wrap, widest = j, sw[j] end
  end
  if not wrap then return t, tiny end
  tiny = '\\scriptsize\\setlength{\\tabcolsep}{3pt}'
  local avail = 443 - 2 * ncols * 3
  local fr, used = {}, 0
  for j = 1, ncols do
    if j ~= wrap then
      fr[j] = (sw[j] + 1.5) * 4.3 / avail
      used = used + fr[j]
    end
  end
  if used > 0.93 then return t, '\\tiny\\setlength{\\tabcolsep}{2.5pt}' end
  fr[wrap] = 0.995 - used
  for j = 1, ncols do t.colspecs[j] = { t.colspecs[j][1], fr[j] } end
  return t, tiny
end

local function latex_marker(kind, prefix)
  if kind == 'chapter' then
    local n = tonumber(prefix)
    if n then
      return pandoc.RawBlock('latex', '\\nwmainmatter{' .. tostring(n - 1) .. '}')
    end
    return pandoc.RawBlock('latex', '\\nwmainmatter{\\value{chapter}}')
  elseif kind == 'appendix' then
    return pandoc.RawBlock('latex', '\\nwappendix')
  elseif kind == 'front' then
    return pandoc.RawBlock('latex', '\\nwfrontmatter')
  else  -- back matter, indexes, other files
    return pandoc.RawBlock('latex', '\\nwbackmatter')
  end
end

-- ------------------------------------------------------------------ HTML

local function html_number(h, prefix)
  local num = pandoc.Span({ pandoc.Str(prefix) }, { class = 'chapter-number' })
  local content = { num, pandoc.Space() }
  for _, x in ipairs(h.content) do table.insert(content, x) end
  h.content = content
  return h
end

-- ------------------------------------------------------------------ figure and table numbers (HTML)
--
-- The PDF numbers figures and captioned tables per chapter (book class:
-- "2.1", "A.3"; a table without a caption takes no number, see the Table
-- case below).  The HTML edition numbers them the same way: the counters
-- restart at every numbered level-1 heading of a chapter or an appendix and
-- run on through unnumbered parts (the back matter keeps counting after the
-- appendix, as LaTeX does); before the first chapter there is no prefix.

local function float_label(state, what)
  state[what] = (state[what] or 0) + 1
  local n = tostring(state[what])
  if state.chap ~= '' then n = state.chap .. '.' .. n end
  return (what == 'fig' and 'Figure ' or 'Table ') .. n
end

local function number_span(text)
  return pandoc.Span({ pandoc.Str(text .. ':') }, { class = 'float-number' })
end

-- Alt text is read aloud and shown when an image fails: plain words, no TeX.
local function plain_math(m)
  local t = m.text:gsub('\\[a-zA-Z]+%s*', function(c)
    local name = c:match('\\(%a+)')
    return (name == 'cdot' or name == 'times') and ' x ' or name
  end)
  return (t:gsub('[{}_^\\$]', ''))
end

local function number_floats(blocks, state)
  for _, b in ipairs(blocks) do
    if b.t == 'Div' and has_class(b, 'nw-file') then
      state.kind = attr(b, 'kind') or 'other'
      state.prefix = attr(b, 'prefix') or ''
    elseif b.t == 'Header' and b.level == 1 and not has_class(b, 'unnumbered')
        and (state.kind == 'chapter' or state.kind == 'appendix') then
      state.chap, state.fig, state.tab = state.prefix, 0, 0
    elseif b.t == 'Para' and #b.content == 1 and b.content[1].t == 'Image'
        and (b.content[1].title or ''):match('^fig:') then
      local img = b.content[1]
      local alt = pandoc.utils.stringify(pandoc.walk_inline(pandoc.Span(img.caption),
        { Math = function(m) return pandoc.Str(plain_math(m)) end }))
      table.insert(img.caption, 1, number_span(float_label(state, 'fig')))
      table.insert(img.caption, 2, pandoc.Space())
      img.attributes['alt'] = alt
    elseif b.t == 'Table' and #b.caption.long > 0 then
      local first = b.caption.long[1]
      if first.content then
        table.insert(first.content, 1, number_span(float_label(state, 'tab')))
        table.insert(first.content, 2, pandoc.Space())
      end
    elseif b.content and b.t ~= 'Table' and type(b.content) == 'table' and b.t == 'Div' then
      number_floats(b.content, state)
    end
  end
end

-- ------------------------------------------------------------------ driver

local function walk_blocks(blocks, state)
  local out = {}
  for _, b in ipairs(blocks) do
    if b.t == 'Div' and has_class(b, 'nw-file') then
      state.kind = attr(b, 'kind') or 'other'
      state.prefix = attr(b, 'prefix') or ''
      if is_latex then table.insert(out, latex_marker(state.kind, state.prefix)) end
    elseif b.t == 'Header' and b.level == 1 and is_html
        and (state.kind == 'chapter' or state.kind == 'appendix')
        and not has_class(b, 'unnumbered') then
      table.insert(out, html_number(b, state.prefix))
    elseif b.t == 'Header' and b.level == 1 and is_latex and b.identifier ~= '' then
      -- the page each part starts on, for weave-pdf.sh's page counts
      table.insert(out, b)
      table.insert(out, pandoc.RawBlock('latex', '\\nwpartstart{' .. b.identifier .. '}'))
      if has_class(b, 'unnumbered') then
        -- \chapter* leaves the running head of the part before it
        local t = latex_escape(pandoc.utils.stringify(b.content))
        table.insert(out, pandoc.RawBlock('latex',
          '\\markboth{\\MakeUppercase{' .. t .. '}}{\\MakeUppercase{' .. t .. '}}'))
      end
    elseif b.t == 'Div' and has_class(b, 'chunk') and is_latex then
      for _, x in ipairs(latex_chunk(b)) do table.insert(out, x) end
    elseif b.t == 'Div' and has_class(b, 'chunk') and is_html then
      for i, x in ipairs(b.content) do
        if x.t == 'CodeBlock' then b.content[i] = link_refs(x, b.identifier) or x end
      end
      table.insert(out, b)
    elseif b.t == 'Div' and has_class(b, 'nw-index') and is_latex then
      local cols = has_class(b, 'ident-index') and '2' or '1'
      table.insert(out, pandoc.RawBlock('latex', '\\begin{nwindex}{' .. cols .. '}'))
      for _, x in ipairs(b.content) do
        if x.t == 'BulletList' then
          for _, item in ipairs(x.content) do
            for i, y in ipairs(item) do
              if i == 1 and (y.t == 'Plain' or y.t == 'Para') then
                table.insert(y.content, 1, pandoc.RawInline('latex', '\\nwentry '))
                table.insert(out, pandoc.Plain(y.content))
              else
                table.insert(out, y)
              end
            end
          end
        else
          table.insert(out, x)
        end
      end
      table.insert(out, pandoc.RawBlock('latex', '\\end{nwindex}'))
    elseif b.t == 'Table' and is_latex and #b.caption.long == 0 then
      -- longtable steps the table counter even without a caption: undo it
      table.insert(out, b)
      table.insert(out, pandoc.RawBlock('latex', '\\addtocounter{table}{-1}'))
    elseif b.t == 'Div' and has_class(b, 'sidebar') and is_latex then
      -- a boxed aside: nwsidebar in latex-header.tex
      table.insert(out, pandoc.RawBlock('latex', '\\begin{nwsidebar}'))
      for _, x in ipairs(walk_blocks(b.content, state)) do table.insert(out, x) end
      table.insert(out, pandoc.RawBlock('latex', '\\end{nwsidebar}'))
    elseif b.t == 'CodeBlock' and has_class(b, 'receipt') and is_latex then
      table.insert(out, latex_receipt(b) or b)
    elseif b.t == 'Div' and has_class(b, 'receipt-table') then
      -- receipts are short cells: natural column widths, never wrapped
      -- (pandoc makes long pipe-table lines into wrapped relative widths)
      b = pandoc.walk_block(b, { Table = function(t)
        for i, cs in ipairs(t.colspecs) do t.colspecs[i] = { cs[1], nil } end
        return t
      end })
      if is_latex then
        local size = '\\small'
        b = pandoc.walk_block(b, { Table = function(t)
          local tsize
          t, tsize = latex_fit_table(t)
          size = tsize
          return t
        end })
        table.insert(out, pandoc.RawBlock('latex', '\\begingroup' .. size))
        for _, x in ipairs(b.content) do
          table.insert(out, x)
          if x.t == 'Table' and #x.caption.long == 0 then
            table.insert(out, pandoc.RawBlock('latex', '\\addtocounter{table}{-1}'))
          end
        end
        table.insert(out, pandoc.RawBlock('latex', '\\endgroup'))
      else
        table.insert(out, b)
      end
    elseif b.t == 'Div' then
      b.content = walk_blocks(b.content, state)
      table.insert(out, b)
    else
      table.insert(out, b)
    end
  end
  return out
end

function Pandoc(doc)
  doc = doc:walk({ Image = check_image })
  if #missing_images > 0 then
    for _, m in ipairs(missing_images) do
      io.stderr:write('book.lua: error: figure ' .. m .. ' not found (resource path: '
        .. table.concat(PANDOC_STATE.resource_path or { '.' }, ':') .. ')\n')
    end
    error('missing figures')
  end
  if is_html then
    number_floats(doc.blocks, { kind = 'other', prefix = '', chap = '' })
  end
  if is_latex and doc.meta.nwvolume
      and pandoc.utils.stringify(doc.meta.nwvolume) == 'reader' then
    volume.reader = true
    doc.blocks = reader_blocks(doc.blocks)
    doc = doc:walk({ Div = function(d)
      if has_class(d, 'complete') then return {} end
    end })
    volume.present = collect_ids(doc)
    if doc.meta.nwother then
      volume.pages = read_other_pages(pandoc.utils.stringify(doc.meta.nwother))
    end
    if doc.meta.nwotherpdf then volume.pdf = pandoc.utils.stringify(doc.meta.nwotherpdf) end
  end
  if is_latex then
    doc = doc:walk({ Div = function(d)
      if has_class(d, 'chunk-xref') then return compact_xref(d) end
    end })
    -- chunk references in cross references and indexes: page numbers; in
    -- the reader's volume those left out name the other volume's pages
    doc = doc:walk({ Span = function(sp)
      if not has_class(sp, 'nw-refs') then return nil end
      local here, there = {}, {}
      pandoc.walk_inline(sp, { Link = function(l)
        local t = l.target:match('^#(.+)$')
        if t then table.insert(is_absent(t) and there or here, t) end
      end })
      if #here + #there == 0 then return nil end
      local parts = {}
      if #here > 0 then
        table.insert(parts, '\\nwpages{' .. table.concat(here, ',') .. '}')
      end
      if #there > 0 then
        local seen, pages = {}, {}
        for _, t in ipairs(there) do
          local p = volume.pages[t] or '?'
          if not seen[p] then
            seen[p] = true
            local txt = p
            if volume.pdf ~= '' and p ~= '?' then
              txt = '\\href{' .. volume.pdf .. '\\#' .. t .. '}{' .. p .. '}'
            end
            table.insert(pages, txt)
          end
        end
        table.insert(parts, '\\emph{Program}\\nobreakspace '
          .. (#pages > 1 and 'pp.' or 'p.') .. '\\nobreakspace ' .. table.concat(pages, ', '))
      end
      return pandoc.RawInline('latex', table.concat(parts, '; '))
    end })
    if volume.reader then
      -- a link to something left out: a name in code prints as plain code
      -- (as in code blocks); in the chunks' cross references the page
      -- follows the text; in the prose the page goes in the margin
      -- (\nwprogref), except where a margin note cannot stand (tables,
      -- sidebars, notes, headings, captions): there it follows in brackets.
      local function inner(el)
        local f = { Link = function(l) return absent_link(l, 'inner') end }
        if el.t == 'Note' or el.t == 'Image' then return pandoc.walk_inline(el, f) end
        return pandoc.walk_block(el, f)
      end
      doc = doc:walk({ Div = function(d)
        if has_class(d, 'chunk-xref') then
          return pandoc.walk_block(d, { Link = function(l) return absent_link(l, 'xref') end })
        elseif has_class(d, 'sidebar') then
          return inner(d)
        end
      end, Table = inner, Header = inner, Note = inner, Image = inner })
      doc = doc:walk({ Link = function(l) return absent_link(l, 'margin') end })
    end
  end
  if is_latex then
    -- nothing off the page: a path in the prose may break after a slash
    -- (an underscore breaks everywhere: latex-header.tex), and a display
    -- equation wider than the text is scaled to its width (\nwdisplaymath)
    local function slashes(code)
      if not code.text:find('/', 1, true) or utf8.len(code.text) < 16 then return nil end
      local out, rest = {}, code.text
      while true do
        local i = rest:find('/', 1, true)
        if not i or i == #rest then break end
        table.insert(out, pandoc.Code(rest:sub(1, i), code.attr))
        table.insert(out, pandoc.RawInline('latex', '\\allowbreak{}'))
        rest = rest:sub(i + 1)
      end
      table.insert(out, pandoc.Code(rest, code.attr))
      return out
    end
    local function text_block(b) return pandoc.walk_block(b, { Code = slashes }) end
    doc = doc:walk({ Para = text_block, Plain = text_block })
    doc = doc:walk({ Math = function(m)
      if m.mathtype ~= 'DisplayMath' then return nil end
      return pandoc.RawInline('latex', '\\nwdisplaymath{' .. m.text .. '}')
    end })
  end
  local state = { kind = 'other', prefix = '' }
  doc.blocks = walk_blocks(doc.blocks, state)
  return doc
end
