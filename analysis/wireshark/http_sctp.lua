-- HTTP over SCTP as the testbed speaks it (ftp-impl/PROTOCOL.md, "HTTP over SCTP"), for
-- Wireshark and tshark: one association on port 80; a request goes on the first free stream
-- and its answer comes back on that stream, each written in messages of 1 KB (httpd's
-- --write-size). Wireshark's own HTTP dissector reads each SCTP message as if it began a
-- message of its own, so an answer's later messages show as stray "continuation" data.
-- Here every stream of every association is followed in each direction: a message that
-- starts a request or an answer is handed to Wireshark's "http" dissector, and every message
-- is labelled with its stream, the object it belongs to (its number on that stream), and,
-- for an answer's body, where in the body it lies and whether it completes the object.
-- Load it with:  tshark -2 -X lua_script:analysis/wireshark/http_sctp.lua -r x.pcap
-- or copy it into Wireshark's personal Lua plugins folder (Help > About > Folders).

local HTTP_PORT = 80

local proto = Proto("httpsctp", "HTTP over SCTP streams (testbed)")

local fields = {
  stream = ProtoField.uint16("httpsctp.stream", "SCTP stream"),
  role = ProtoField.string("httpsctp.role", "Role", base.ASCII,
                           "request, response (its head and maybe body bytes), body, or "
                           .. "waiting (ahead of a lost message: make a second pass)"),
  object = ProtoField.uint32("httpsctp.object", "Object on this stream (1: the first)"),
  target = ProtoField.string("httpsctp.target", "Request target"),
  status = ProtoField.uint16("httpsctp.status", "Status code"),
  content_length = ProtoField.uint64("httpsctp.content_length", "Content-Length"),
  body_offset = ProtoField.uint64("httpsctp.body_offset", "Body offset of this message"),
  body_bytes = ProtoField.uint32("httpsctp.body_bytes", "Body bytes in this message"),
  complete = ProtoField.bool("httpsctp.complete", "This message completes the object"),
  again = ProtoField.bool("httpsctp.retransmission", "A copy of a message already received"),
}
proto.fields = fields

local f_sid = Field.new("sctp.data_sid")
local f_ssn = Field.new("sctp.data_ssn")
local http = Dissector.get("http")

-- Per association, direction and stream: the object being received and what is left of its
-- body. Filled in the first pass (packets in capture order); what each message was is kept
-- per frame and chunk, so that a later pass labels it the same.
local flows = {}
local seen = {}          -- "frame:offset of the chunk's payload" -> what it was

-- The stream and stream sequence number of the DATA chunk being dissected: the SCTP
-- dissector adds each chunk's fields before handing its payload on, so they are the last
-- ones in the tree so far.
local function last_value(field)
  local values = { field() }
  if #values == 0 then return 0 end
  return values[#values].value
end

local function flow_key(pinfo, stream)
  return tostring(pinfo.src) .. ":" .. pinfo.src_port .. ">" .. tostring(pinfo.dst) .. ":" ..
         pinfo.dst_port .. "#" .. stream
end

local function head_of(text)
  local stop = text:find("\r\n\r\n", 1, true)
  if not stop then return nil end
  return text:sub(1, stop + 3)
end

-- What one message is, given its flow's state (changed in place).
local function classify(text, flow)
  if flow.left and flow.left > 0 then
    local take = math.min(#text, flow.left)
    local offset = flow.length - flow.left
    flow.left = flow.left - take
    return { role = "body", object = flow.object, target = flow.target, offset = offset,
             bytes = take, complete = flow.left == 0, length = flow.length }
  end
  local method, target = text:match("^(%u+) (%S+) HTTP/1%.%d\r\n")
  if method then
    flow.object = (flow.object or 0) + 1
    return { role = "request", object = flow.object, target = method .. " " .. target }
  end
  local status = text:match("^HTTP/1%.%d (%d%d%d)")
  if status then
    local head = head_of(text) or text
    local length = tonumber(head:lower():match("\r\ncontent%-length:%s*(%d+)") or "0")
    local bytes = math.min(#text - #head, length)
    flow.object = (flow.object or 0) + 1
    flow.length = length
    flow.left = length - bytes
    return { role = "response", object = flow.object, status = tonumber(status),
             length = length, offset = 0, bytes = bytes, complete = flow.left == 0 }
  end
  return { role = "unknown" }
end

-- Messages are read in stream order (SSN), as the receiver delivers them: one that arrives
-- ahead of a lost one waits in `pending` until the gap is filled, a copy of one already read
-- is labelled as it was. Labels are final in a second pass (tshark -2).
local function follow(flow, ssn, text, chunk)
  flow.next = flow.next or 0
  flow.by_ssn = flow.by_ssn or {}
  flow.pending = flow.pending or {}
  if ssn < flow.next then
    local first = flow.by_ssn[ssn] or { role = "unknown" }
    seen[chunk] = setmetatable({ again = true }, { __index = first })
    return
  end
  flow.pending[ssn] = { text = text, chunk = chunk }
  while flow.pending[flow.next] do
    local message = flow.pending[flow.next]
    flow.pending[flow.next] = nil
    local what = classify(message.text, flow)
    flow.by_ssn[flow.next] = what
    seen[message.chunk] = what
    flow.next = flow.next + 1
  end
end

function proto.dissector(tvb, pinfo, tree)
  local length = tvb:len()
  if length == 0 then return 0 end
  local stream = last_value(f_sid)
  local chunk = pinfo.number .. ":" .. tvb:offset()
  if not pinfo.visited then
    local key = flow_key(pinfo, stream)
    flows[key] = flows[key] or {}
    follow(flows[key], last_value(f_ssn), tvb:raw(), chunk)
  end
  local what = seen[chunk] or { role = "waiting", waiting = true }
  local subtree = tree:add(proto, tvb(), "HTTP over SCTP (stream " .. stream .. ", " ..
                           what.role .. (what.object and (", object " .. what.object) or "") ..
                           ")")
  subtree:add(fields.stream, stream)
  subtree:add(fields.role, what.role)
  if what.again then subtree:add(fields.again, true) end
  if what.object then subtree:add(fields.object, what.object) end
  if what.target then subtree:add(fields.target, what.target) end
  if what.status then subtree:add(fields.status, what.status) end
  if what.length then subtree:add(fields.content_length, UInt64.new(what.length)) end
  if what.bytes then
    subtree:add(fields.body_offset, UInt64.new(what.offset))
    subtree:add(fields.body_bytes, what.bytes)
    subtree:add(fields.complete, what.complete)
  end
  if (what.role == "request" or what.role == "response") and not what.again then
    http:call(tvb, pinfo, tree)
  else
    pinfo.cols.protocol = "HTTP/SCTP"
    pinfo.cols.info:append(" [stream " .. stream .. " body of object " ..
                           tostring(what.object or "?") .. "]")
  end
  return length
end

-- only the first pass over a capture (packets not yet visited) follows the flows: a new
-- capture starts them afresh
function proto.init()
  flows = {}
end

DissectorTable.get("sctp.port"):add(HTTP_PORT, proto)
