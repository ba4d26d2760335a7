-- FTP over SCTP as the testbed speaks it (ftp-impl/PROTOCOL.md), for Wireshark and tshark.
--
--   sctp-ms, sctp-ms-cp  one association on port 21: stream 0 carries commands and replies
--                        (handed to Wireshark's own "ftp" dissector), stream 1 carries all data
--                        (handed to "ftp-data").
--   sctp-naive           a control association on port 21 like classic FTP, and one data
--                        association per transfer on the port a PASV (227) or EPSV (229) reply
--                        announced; those ports are registered on the fly.
--
-- Every line on stream 0 is also parsed here into ftpsctp.* fields, because the built-in FTP
-- dissector reads only the first line of a message and sctp-ms-cp pipelines several commands
-- in one message. Load it with:  tshark -X lua_script:analysis/wireshark/ftp_sctp.lua -r x.pcap
-- or copy it into Wireshark's personal Lua plugins folder (Help > About > Folders).

local FTP_PORT = 21
local CONTROL_STREAM = 0
local DATA_STREAM = 1

local proto = Proto("ftpsctp", "FTP over SCTP (testbed)")

local fields = {
  variant = ProtoField.string("ftpsctp.variant", "Variant",
                              base.ASCII, "sctp-ms (one association) or sctp-naive"),
  role = ProtoField.string("ftpsctp.role", "Role", base.ASCII, "control or data"),
  stream = ProtoField.uint16("ftpsctp.stream", "SCTP stream"),
  line = ProtoField.string("ftpsctp.line", "Line"),
  command = ProtoField.string("ftpsctp.command", "Command"),
  arg = ProtoField.string("ftpsctp.arg", "Argument"),
  reply_code = ProtoField.uint16("ftpsctp.reply_code", "Reply code"),
  reply_text = ProtoField.string("ftpsctp.reply_text", "Reply text"),
  announced = ProtoField.uint64("ftpsctp.announced_bytes", "Bytes announced by the 150 reply"),
  data_port = ProtoField.uint16("ftpsctp.data_port", "Data association port (PASV/EPSV)"),
  pipelined = ProtoField.bool("ftpsctp.pipelined", "Several commands in one message"),
  data_len = ProtoField.uint32("ftpsctp.data_length", "Data bytes"),
}
proto.fields = fields

local f_sid = Field.new("sctp.data_sid")

local ftp = Dissector.get("ftp")
local ftp_data = Dissector.get("ftp-data")
local sctp_ports = DissectorTable.get("sctp.port")

-- What the first pass learns. A variant is known once its association showed it: MSTREAM ON
-- or stream 1 (sctp-ms), several commands in one message (sctp-ms-cp), a PASV/EPSV reply or a
-- data association (sctp-naive). Until then the control association is plain "sctp"; a second
-- pass (tshark -2, or Wireshark redissecting) labels every packet with what was learnt.
local data_ports = {}      -- server port -> true, learnt from 227/229 replies
local multistream = {}     -- association key -> true once stream 1 or MSTREAM ON is seen
local pipelined = {}       -- association key -> true once a message carried several commands
local naive = {}           -- association key -> true once it announced a data association

local function association(pinfo)
  local a = tostring(pinfo.src) .. ":" .. pinfo.src_port
  local b = tostring(pinfo.dst) .. ":" .. pinfo.dst_port
  if a < b then return a .. "-" .. b end
  return b .. "-" .. a
end

-- The stream of the DATA chunk being dissected: the SCTP dissector adds each chunk's fields
-- before handing its payload on, so it is the last sctp.data_sid in the tree so far.
local function current_stream()
  local sids = { f_sid() }
  if #sids == 0 then return nil end
  return sids[#sids].value
end

local function learn_data_port(text, pinfo, item)
  local port
  local h1, h2, h3, h4, p1, p2 = text:match("%((%d+),(%d+),(%d+),(%d+),(%d+),(%d+)%)")
  if p1 then
    port = tonumber(p1) * 256 + tonumber(p2)
  else
    port = tonumber(text:match("%(|||(%d+)|%)") or "")
  end
  if not port then return end
  item:add(fields.data_port, port)
  naive[association(pinfo)] = true
  if not pinfo.visited and not data_ports[port] then
    data_ports[port] = true
    sctp_ports:add(port, proto)
  end
end

local function dissect_control(tvb, pinfo, tree, key)
  local from_server = pinfo.src_port == FTP_PORT
  local text = tvb:raw()
  local offset, commands = 0, 0
  for line, ending in text:gmatch("([^\r\n]*)(\r?\n?)") do
    local length = #line + #ending
    if length == 0 then break end
    if #line > 0 then
      local item = tree:add(fields.line, tvb(offset, #line), line)
      if from_server then
        local code, rest = line:match("^(%d%d%d)[ -](.*)$")
        if code then
          item:add(fields.reply_code, tonumber(code))
          item:add(fields.reply_text, rest)
          if code == "150" then
            local bytes = rest:match("%((%d+) bytes%)%.?%s*$")
            if bytes then item:add(fields.announced, UInt64.new(tonumber(bytes))) end
          elseif code == "227" or code == "229" then
            learn_data_port(rest, pinfo, item)
          elseif code == "200" and rest:upper():find("MSTREAM ON", 1, true) then
            multistream[key] = true
          end
        end
      else
        local verb, arg = line:match("^(%S+)%s*(.*)$")
        if verb then
          commands = commands + 1
          item:add(fields.command, verb:upper())
          if #arg > 0 then item:add(fields.arg, arg) end
        end
      end
    end
    offset = offset + length
  end
  if commands > 1 then
    tree:add(fields.pipelined, true)
    pipelined[key] = true
  end
end

function proto.dissector(tvb, pinfo, tree)
  local length = tvb:len()
  if length == 0 then return 0 end
  local stream = current_stream() or CONTROL_STREAM
  local key = association(pinfo)
  local on_control_port = pinfo.src_port == FTP_PORT or pinfo.dst_port == FTP_PORT
  local role
  if on_control_port and stream == CONTROL_STREAM then
    role = "control"
  else
    role = "data"
    if on_control_port and stream == DATA_STREAM then multistream[key] = true end
  end
  local variant = "sctp"
  if not on_control_port or naive[key] then
    variant = "sctp-naive"
  elseif pipelined[key] then
    variant = "sctp-ms-cp"
  elseif multistream[key] then
    variant = "sctp-ms"
  end

  local subtree = tree:add(proto, tvb(), "FTP over SCTP (" .. variant .. ", stream " ..
                           stream .. ", " .. role .. ")")
  subtree:add(fields.variant, variant)
  subtree:add(fields.role, role)
  subtree:add(fields.stream, stream)
  if role == "control" then
    dissect_control(tvb, pinfo, subtree, key)
    ftp:call(tvb, pinfo, tree)
  else
    subtree:add(fields.data_len, length)
    ftp_data:call(tvb, pinfo, tree)
  end
  return length
end

sctp_ports:add(FTP_PORT, proto)
