#!/usr/bin/env node
// Starts dynalite (pinned in package.json) for the runtime/dynamostore tests.
//
// Usage: node tools/dynalite-server.js --port 4567 [--host 127.0.0.1] [--plain]
//                                      [--path DIR]
//
// In memory by default; --path keeps the tables in a LevelDB directory so
// they survive a restart (the fault tests kill and restart a private server).
// Tables become ACTIVE at once (dynalite's default is after 500 ms) so tests
// that create one table each stay fast.
//
// dynalite 4.0.0 lacks one DynamoDB feature the store relies on for one-round-
// trip replays: ReturnValuesOnConditionCheckFailure=ALL_OLD on PutItem,
// UpdateItem and DeleteItem, which makes a ConditionalCheckFailedException
// carry the item that failed the condition (DynamoDB since 2023-06, DynamoDB
// Local since 2023-12; upstream request: architect/dynalite#182). Unless
// --plain is given, this launcher adds exactly that, following the
// DynamoDB API reference: the parameter is accepted (ALL_OLD | NONE) and,
// when it is ALL_OLD and an item exists, the error body gets an "Item" member.
// With --plain that addition is left out, so the store's fallback read is
// exercised against dynalite as published (the guard against clients that
// drop a request, below, applies in both modes).
//
// dynalite also lacks TransactWriteItems, which the store's ordered claims
// use; dynalite-transact.js adds it in both modes (--plain only leaves the
// items out of its cancellation reasons). A server started from an older
// checkout of this file answers it with UnknownOperationException: restart
// it (scripts/dynalite.sh stop, then start).
'use strict'

var argv = require('minimist')(process.argv.slice(2), { boolean: [ 'plain' ] })

if (!argv.plain) {
  var db = require('dynalite/db')
  var param = { type: 'String', enum: [ 'ALL_OLD', 'NONE' ] }
  for (var action of [ 'putItem', 'updateItem', 'deleteItem' ]) {
    require('dynalite/validations/' + action).types.ReturnValuesOnConditionCheckFailure = param
  }
  var checkConditional = db.checkConditional
  db.checkConditional = function (data, existingItem) {
    var err = checkConditional.apply(this, arguments)
    if (err && err.body && /ConditionalCheckFailedException$/.test(err.body.__type) &&
        data.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && existingItem) {
      err.body.Item = existingItem
    }
    return err
  }
}

// dynalite throws from a request's 'error' handler when a client drops the
// connection mid-request (a canceled context, a client timeout), which
// would kill the server shared by every test. Log those and carry on;
// anything else still ends the process.
process.on('uncaughtException', function (err) {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
    console.error('dynalite: a client dropped a request (%s); still serving', err.message)
    return
  }
  console.error(err)
  process.exit(1)
})

// The item store dynalite makes, for TransactWriteItems.
var db = require('dynalite/db')
var store
var create = db.create
db.create = function () {
  store = create.apply(this, arguments)
  return store
}

var server = require('dynalite')({
  path: argv.path || undefined,
  createTableMs: argv.createTableMs != null ? +argv.createTableMs : 0,
  deleteTableMs: argv.deleteTableMs != null ? +argv.deleteTableMs : 0,
  updateTableMs: argv.updateTableMs != null ? +argv.updateTableMs : 0,
})
// TransactWriteItems goes to dynalite-transact.js; everything else, as
// before, to dynalite. dynalite checks the request's signature headers;
// this handler trusts them (the tests sign every request anyway).
var transact = require('./dynalite-transact')
var dynaliteHandler = server.listeners('request')[0]
server.removeAllListeners('request')
server.on('request', function (req, res) {
  if (!/\.TransactWriteItems$/.test(req.headers['x-amz-target'] || '')) return dynaliteHandler(req, res)
  var chunks = []
  req.on('data', function (c) { chunks.push(c) })
  req.on('end', function () {
    var send = function (status, body) {
      var text = JSON.stringify(body)
      res.statusCode = status
      res.setHeader('Content-Type', 'application/x-amz-json-1.0')
      res.setHeader('x-amz-crc32', require('buffer-crc32').unsigned(text))
      res.setHeader('Content-Length', Buffer.byteLength(text, 'utf8'))
      res.end(text)
    }
    var body
    try {
      body = JSON.parse(Buffer.concat(chunks).toString() || '{}')
    }
    catch (e) {
      return send(400, { __type: 'com.amazon.coral.service#SerializationException' })
    }
    transact(store, body, !argv.plain, function (err, out) {
      if (err && err.statusCode) return send(err.statusCode, err.body)
      if (err) throw err
      send(200, out)
    })
  })
})

server.listen(+(argv.port || 4567), argv.host || '127.0.0.1', function () {
  var a = server.address()
  console.log('dynalite%s listening at http://%s:%d', argv.plain ? ' (plain)' : '', a.address, a.port)
})
process.on('SIGTERM', function () { process.exit(0) })
process.on('SIGINT', function () { process.exit(0) })
